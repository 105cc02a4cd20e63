"""The judge's typed conversation with one run child.

Every request has a deadline. A child that misses it is killed as a group (`timeout`); one that dies or
garbles the channel is a `runtime_error`; one that reports an exception from the submission likewise.
"""

from __future__ import annotations

import dataclasses
import secrets
import shutil
import time
from pathlib import Path
from typing import Any

from kernelgrade.evaluator.compare import OutputMeta
from kernelgrade.evaluator.host.hold_watch import watch
from kernelgrade.evaluator.request import TimingParams
from kernelgrade.evaluator.result import Failure, Stage
from kernelgrade.evaluator.sandbox.child_env import child_env, package_root, python_argv
from kernelgrade.evaluator.sandbox.child_process import BadReply, ChildGone, ChildProcess, ChildTimeout
from kernelgrade.evaluator.sandbox.launcher import ChildSpec, Launcher
from kernelgrade.evaluator.wire.hold_page import PAGE_NAME, HoldPage
from kernelgrade.evaluator.wire.prebuilt import Prebuilt
from kernelgrade.evaluator.wire.replies import CallReply, Integrity, TimedOutputsReply, TimedReply


class StageFailed(Exception):
    """A child stage ended without a usable reply; carries the verdict-worthy failure."""

    def __init__(self, failure: Failure, timed_out: bool) -> None:
        super().__init__(failure.message)
        self.failure = failure
        self.timed_out = timed_out


class RunSession:
    """One run child, started before its submission is known: it sees only its own work dir, whose
    `prebuilt/` receives the submission's built libraries (stage_extensions) just before `load`; `ext/` is
    where a build made at run time would go."""

    def __init__(self, launcher: Launcher, work_dir: Path, gpu_index: int | None, extra_env: dict[str, str],
                 hidden: tuple[Path, ...] = ()) -> None:
        self.work_dir = work_dir
        self.prebuilt_dir = work_dir / "prebuilt"
        extensions_dir = work_dir / "ext"
        extensions_dir.mkdir(exist_ok=True)
        # Made before the child exists, mapped by both (wire/hold_page.py); watched while the child times.
        self.hold_page = HoldPage.create(work_dir / PAGE_NAME) if gpu_index is not None else None
        env = child_env(work_dir, extensions_dir, extra_env)
        spec = ChildSpec(python_argv("kernelgrade.evaluator.child.run_child"), env, work_dir,
                         writable=(extensions_dir,), readable=(package_root(),), gpu_index=gpu_index,
                         hidden=(work_dir.parent, *hidden))
        self.child = ChildProcess(launcher.popen(spec))
        # Replies must carry this key and the request's sequence number (docs/threats.md 18).
        self._key = secrets.token_hex(16)
        self._seq = 0

    def stage_extensions(self, built: Path, prebuilt: tuple[Prebuilt, ...]) -> None:
        """Copy the compiled libraries (only those: never other jobs' builds) where the child imports them."""
        for entry in prebuilt:
            target = self.prebuilt_dir / entry.library
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(built / entry.library, target)

    def started(self, timeout: float) -> None:
        """Wait until the child has imported torch: work on the CPU only, nothing on the device yet."""
        self._request(Stage.LOAD, {"op": "ready", "channel_key": self._key}, timeout)

    def warm(self, device: str, timeout: float) -> None:
        """Create the device's context and its libraries' handles, before any submission."""
        self._request(Stage.LOAD, {"op": "warm", "device": device, "channel_key": self._key}, timeout)

    def close(self) -> None:
        self.child.kill()

    def output(self) -> str:
        return self.child.log.text()

    def _request(self, stage: Stage, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        self._seq += 1
        message = {**message, "seq": self._seq}
        try:
            reply = self.child.request(message, timeout)
        except BadReply as exc:
            raise StageFailed(_forged(stage, message, str(exc), self.output()), timed_out=False) from None
        except ChildTimeout:
            self.child.kill()
            raise StageFailed(Failure(Stage(stage), "timeout", f"{_what(message)} ran past its {timeout:.0f} s"
                                      " limit; the process was killed. Look for an endless loop or a hang.",
                                      detail=_tail(self.output())), timed_out=True) from None
        except ChildGone as exc:
            raise StageFailed(Failure(stage, "crashed", f"{_what(message)} crashed: {exc}.",
                                      detail=_tail(self.output())), timed_out=False) from None
        if reply.get("channel_key") != self._key or reply.get("seq") != self._seq:
            raise StageFailed(_forged(stage, message, f"a reply without this run's key or sequence number:"
                                      f" {str(reply)[:200]}", self.output()), timed_out=False)
        if not reply.get("ok"):
            raise StageFailed(Failure(stage, "exception", f"{_what(message)} raised an exception:\n"
                                      f"{_last_line(str(reply.get('error', '')))}",
                                      detail=str(reply.get("error", ""))), timed_out=False)
        return reply

    def load(self, submission: Path, init_inputs: Path, seed: int, device: str, prebuilt: tuple[Prebuilt, ...],
             timeout: float) -> Integrity:
        reply = self._request(Stage.LOAD, {"op": "load", "submission": str(submission),
                                           "init_inputs": str(init_inputs), "seed": seed, "device": device,
                                           "prebuilt": [p.to_json() for p in prebuilt],
                                           "prebuilt_dir": str(self.prebuilt_dir),
                                           "channel_key": self._key}, timeout)
        return Integrity.from_reply(reply)

    def call(self, inputs: Path, outputs: Path, poison_bytes: list[int], timeout: float,
             settle_s: float = 0.0) -> CallReply:
        reply = self._request(Stage.CORRECTNESS, {"op": "call", "inputs": str(inputs), "outputs": str(outputs),
                                                  "poison_bytes": poison_bytes, "settle_s": settle_s}, timeout)
        metas = tuple(OutputMeta(str(m["type_name"]), bool(m["is_plain_tensor"]), str(m["device"]),
                                 str(m["dtype"]), tuple(int(d) for d in m["shape"]), str(m.get("why_not_plain", "")))
                      for m in reply["outputs"])
        return CallReply(metas, tuple(int(i) for i in reply.get("mutated_inputs", [])),
                         bool(reply.get("changed_after_return")), Integrity.from_reply(reply),
                         tuple(int(f) for f in reply.get("input_fingerprints", [])))

    def warmup(self, input_sets: list[Path], params: TimingParams, flush_bytes: int, timeout: float,
               settle_s: float = 0.0) -> Integrity:
        with watch().watching(self.hold_page):
            reply = self._request(Stage.TIMING, {"op": "warmup", "input_sets": [str(p) for p in input_sets],
                                                 "params": dataclasses.asdict(params), "flush_bytes": flush_bytes,
                                                 "settle_s": settle_s}, timeout)
        return Integrity.from_reply(reply)

    def time(self, params: TimingParams, timeout: float) -> TimedReply:
        """Time the candidate on the input sets and flush buffer given to warmup()."""
        started = time.perf_counter()
        message = {"op": "time", "params": dataclasses.asdict(params)}
        with watch().watching(self.hold_page):
            reply = self._request(Stage.TIMING, message, timeout)
        outer = time.perf_counter() - started
        raw_l2 = reply.get("l2")
        l2: dict[str, Any] = raw_l2 if isinstance(raw_l2, dict) else {}
        return TimedReply(tuple(map(float, reply["device_ms"])), tuple(map(float, reply["wall_ms"])),
                          str(reply["stop_reason"]), str(reply["clock"]), Integrity.from_reply(reply), outer,
                          str(l2.get("status", "")), int(l2.get("limit_bytes", 0)),
                          int(reply.get("clock_tampered_reps", 0)), int(reply.get("host_bound_reps", 0)),
                          tuple(map(float, reply.get("flush_ms", []))), str(reply.get("hold", "")))

    def timed_outputs(self, outputs_dir: Path, timeout: float) -> TimedOutputsReply:
        """Have the child write its sample of timed outputs, each as [set, scale step, rep, [outputs]], to
        `outputs_dir`/timed_{i}.kgt."""
        reply = self._request(Stage.TIMING, {"op": "timed_outputs", "outputs_dir": str(outputs_dir)}, timeout)
        changed = tuple(int(r) for r in reply.get("changed_after_return", []))
        return TimedOutputsReply(int(reply.get("kept", 0)), changed, Integrity.from_reply(reply))


def _forged(stage: Stage, message: dict[str, Any], what: str, output: str) -> Failure:
    return Failure(stage, "reply_forged", f"during {_what(message)} the result channel carried {what}. Only the"
                   " harness writes there, with this run's key: the submission wrote to the judge's channel"
                   " (docs/threats.md 18).", detail=_tail(output))


def _what(message: dict[str, Any]) -> str:
    return {"warm": "starting the run child",
            "load": "loading ModelNew", "call": "forward()", "warmup": "warm-up", "time": "the timing loop",
            "timed_outputs": "writing timed outputs"}.get(
        str(message.get("op")), "the child")


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "(no message)"


def _tail(text: str, lines: int = 30) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])
