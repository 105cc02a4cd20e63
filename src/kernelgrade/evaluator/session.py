"""The judge's typed conversation with one run child.

Every request has a deadline. A child that misses it is killed as a group (`timeout`); one that dies or
garbles the channel is a `runtime_error`; one that reports an exception from the submission likewise.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelgrade.evaluator.child_env import child_env, package_root, python_argv
from kernelgrade.evaluator.child_process import BadReply, ChildGone, ChildProcess, ChildTimeout
from kernelgrade.evaluator.compare import OutputMeta
from kernelgrade.evaluator.launcher import ChildSpec, Launcher
from kernelgrade.evaluator.request import TimingParams
from kernelgrade.evaluator.result import Failure, Stage


class StageFailed(Exception):
    """A child stage ended without a usable reply; carries the verdict-worthy failure."""

    def __init__(self, failure: Failure, timed_out: bool) -> None:
        super().__init__(failure.message)
        self.failure = failure
        self.timed_out = timed_out


@dataclass(frozen=True)
class Integrity:
    """What the child says about itself after a call; the judge turns these into findings."""

    replaced_functions: tuple[str, ...]
    precision_flags_changed: tuple[str, ...]
    extra_threads: int

    @classmethod
    def from_reply(cls, reply: dict[str, Any]) -> Integrity:
        return cls(tuple(map(str, reply.get("replaced_functions", []))),
                   tuple(map(str, reply.get("precision_flags_changed", []))), int(reply.get("extra_threads", 0)))


@dataclass(frozen=True)
class CallReply:
    outputs: tuple[OutputMeta, ...]
    mutated_inputs: tuple[int, ...]
    changed_after_return: bool
    integrity: Integrity


@dataclass(frozen=True)
class TimedReply:
    device_ms: tuple[float, ...]
    wall_ms: tuple[float, ...]
    stop_reason: str
    clock: str
    integrity: Integrity
    outer_seconds: float  # the judge's own clock around the whole timed phase


class RunSession:
    def __init__(self, launcher: Launcher, work_dir: Path, extensions_dir: Path, gpu_index: int | None,
                 extra_env: dict[str, str]) -> None:
        env = child_env(work_dir, extensions_dir, extra_env)
        spec = ChildSpec(python_argv("kernelgrade.evaluator.run_child"), env, work_dir,
                         writable=(extensions_dir.parent,), readable=(package_root(),), gpu_index=gpu_index)
        self.child = ChildProcess(launcher.popen(spec))

    def close(self) -> None:
        self.child.kill()

    def output(self) -> str:
        return self.child.log.text()

    def _request(self, stage: Stage, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        try:
            reply = self.child.request(message, timeout)
        except ChildTimeout:
            self.child.kill()
            raise StageFailed(Failure(Stage(stage), "timeout", f"{_what(message)} ran past its {timeout:.0f} s"
                                      " limit; the process was killed. Look for an endless loop or a hang.",
                                      detail=_tail(self.output())), timed_out=True) from None
        except (ChildGone, BadReply) as exc:
            raise StageFailed(Failure(stage, "crashed", f"{_what(message)} crashed: {exc}.",
                                      detail=_tail(self.output())), timed_out=False) from None
        if not reply.get("ok"):
            raise StageFailed(Failure(stage, "exception", f"{_what(message)} raised an exception:\n"
                                      f"{_last_line(str(reply.get('error', '')))}",
                                      detail=str(reply.get("error", ""))), timed_out=False)
        return reply

    def load(self, submission: Path, init_inputs: Path, seed: int, device: str, timeout: float) -> None:
        self._request(Stage.LOAD, {"op": "load", "submission": str(submission), "init_inputs": str(init_inputs),
                                   "seed": seed, "device": device}, timeout)

    def call(self, inputs: Path, outputs: Path, poison_bytes: list[int], timeout: float) -> CallReply:
        reply = self._request(Stage.CORRECTNESS, {"op": "call", "inputs": str(inputs), "outputs": str(outputs),
                                                  "poison_bytes": poison_bytes}, timeout)
        metas = tuple(OutputMeta(str(m["type_name"]), bool(m["is_plain_tensor"]), str(m["device"]),
                                 str(m["dtype"]), tuple(int(d) for d in m["shape"])) for m in reply["outputs"])
        return CallReply(metas, tuple(int(i) for i in reply.get("mutated_inputs", [])),
                         bool(reply.get("changed_after_return")), Integrity.from_reply(reply))

    def warmup(self, input_sets: list[Path], params: TimingParams, timeout: float) -> None:
        self._request(Stage.TIMING, {"op": "warmup", "input_sets": [str(p) for p in input_sets],
                                     "params": dataclasses.asdict(params)}, timeout)

    def time(self, params: TimingParams, flush_bytes: int, outputs: Path, timeout: float) -> TimedReply:
        """Time the candidate on the input sets given to warmup()."""
        started = time.perf_counter()
        message = {"op": "time", "params": dataclasses.asdict(params), "flush_bytes": flush_bytes,
                   "outputs": str(outputs)}
        reply = self._request(Stage.TIMING, message, timeout)
        outer = time.perf_counter() - started
        return TimedReply(tuple(map(float, reply["device_ms"])), tuple(map(float, reply["wall_ms"])),
                          str(reply["stop_reason"]), str(reply["clock"]), Integrity.from_reply(reply), outer)


def _what(message: dict[str, Any]) -> str:
    return {"load": "loading ModelNew", "call": "forward()", "warmup": "warm-up", "time": "the timing loop"}.get(
        str(message.get("op")), "the child")


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "(no message)"


def _tail(text: str, lines: int = 30) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])
