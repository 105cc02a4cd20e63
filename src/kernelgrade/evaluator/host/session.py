"""The judge's typed conversation with one run child, in the protocol of wire/protocol.py.

Every request has a deadline. A child that misses it is killed as a group (`timeout`); one that dies, or
reports an exception from the submission, is a `runtime_error`. A line that is not this run's reply to the
request (garbled, without this run's key, or not the request's reply type) is `reply_forged`.
"""

from __future__ import annotations

import secrets
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

import torch

from kernelgrade.evaluator.host.hold_watch import watch
from kernelgrade.evaluator.host.removals import removals
from kernelgrade.evaluator.integrity.proctree import tree_waited_ns
from kernelgrade.evaluator.request import TimingParams
from kernelgrade.evaluator.result import Failure, Stage
from kernelgrade.evaluator.sandbox.child_env import child_env, package_root, python_argv
from kernelgrade.evaluator.sandbox.child_process import BadReply, ChildGone, ChildProcess, ChildTimeout
from kernelgrade.evaluator.sandbox.launcher import ChildSpec, Launcher
from kernelgrade.evaluator.wire import tensorfile
from kernelgrade.evaluator.wire.hold_page import PAGE_NAME, HoldPage
from kernelgrade.evaluator.wire.prebuilt import Prebuilt
from kernelgrade.evaluator.wire.protocol import (
    CallRequest,
    ForgedReply,
    LoadRequest,
    Op,
    ReadSetsRequest,
    ReadyRequest,
    Refusal,
    Request,
    TimedOutputsRequest,
    TimeRequest,
    WarmRequest,
    WarmupRequest,
    read_reply,
    request_line,
)
from kernelgrade.evaluator.wire.replies import CallReply, Integrity, TimedOutputsReply, TimedReply
from kernelgrade.evaluator.wire.shared_region import SharedRegion, aligned

ReplyT = TypeVar("ReplyT")


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
        self.work_dir, self.gpu_index = work_dir, gpu_index
        self.prebuilt_dir = work_dir / "prebuilt"
        extensions_dir = work_dir / "ext"
        extensions_dir.mkdir(exist_ok=True)
        # Made before the child exists, mapped by both (wire/hold_page.py); watched while the child times.
        self.hold_page = HoldPage.create(work_dir / PAGE_NAME) if gpu_index is not None else None
        # Where checked calls' inputs and outputs cross (wire/shared_region.py): this child's alone, closed with it.
        self.region = SharedRegion.create(pin=gpu_index is not None)
        self.region_mapped = False  # whether the child mapped it (its reply to `load`)
        env = child_env(work_dir, extensions_dir, extra_env)
        spec = ChildSpec(python_argv("kernelgrade.evaluator.child.run_child"), env, work_dir,
                         writable=(extensions_dir,), readable=(package_root(),), gpu_index=gpu_index,
                         hidden=(work_dir.parent, *hidden), shared_fds=(self.region.fd,))
        try:
            self.child = ChildProcess(launcher.popen(spec))
        except BaseException:
            self.region.close()
            raise
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
        self._request(Stage.LOAD, ReadyRequest(), timeout)

    def warm(self, device: str, timeout: float) -> None:
        """Create the device's context and its libraries' handles, before any submission."""
        self._request(Stage.LOAD, WarmRequest(device), timeout)

    def close(self) -> None:
        self.child.kill()
        # The child is gone, and with it the only other mapping: the region is closed off the judge's path.
        removals().close(self.region)
        if self.hold_page is not None:
            # The page's file goes with its child: a later child of the same work dir (the compiled baseline's,
            # after the candidate's) is given a page of its own, made afresh.
            (self.work_dir / PAGE_NAME).unlink(missing_ok=True)

    def output(self) -> str:
        return self.child.log.text()

    def _request(self, stage: Stage, request: Request[ReplyT], timeout: float) -> ReplyT:
        return self._read(stage, request, self._exchange(stage, request, timeout))

    def _exchange(self, stage: Stage, request: Request[Any], timeout: float) -> dict[str, object]:
        """Send the request, wait for a line back; the child's death or silence ends the stage here."""
        self._seq += 1
        try:
            return self.child.request(request_line(request, self._seq, self._key), timeout)
        except BadReply as exc:
            raise StageFailed(_forged(stage, request, str(exc), self.output()), timed_out=False) from None
        except ChildTimeout:
            self.child.kill()
            raise StageFailed(Failure(Stage(stage), "timeout", f"{_what(request)} ran past its {timeout:.0f} s"
                                      " limit; the process was killed. Look for an endless loop or a hang.",
                                      detail=_tail(self.output())), timed_out=True) from None
        except ChildGone as exc:
            raise StageFailed(Failure(stage, "crashed", f"{_what(request)} crashed: {exc}.",
                                      detail=_tail(self.output())), timed_out=False) from None

    def _read(self, stage: Stage, request: Request[ReplyT], raw: dict[str, object]) -> ReplyT:
        try:
            reply = read_reply(raw, request, self._seq, self._key)
        except ForgedReply as exc:
            raise StageFailed(_forged(stage, request, str(exc), self.output()), timed_out=False) from None
        if isinstance(reply, Refusal):
            raise StageFailed(Failure(stage, "exception", f"{_what(request)} raised an exception:\n"
                                      f"{_last_line(reply.message)}", detail=reply.message), timed_out=False)
        return reply

    def load(self, submission: Path, init_inputs: Path, seed: int, device: str, prebuilt: tuple[Prebuilt, ...],
             timeout: float) -> Integrity:
        loaded = self._request(Stage.LOAD, LoadRequest(submission, init_inputs, seed, device, prebuilt,
                                                       self.prebuilt_dir, self.region.fd), timeout)
        self.region_mapped = loaded.shared_region
        return loaded.integrity

    def grow_region(self, values: Sequence[Any], room_after: int = 0) -> None:
        """Where the child mapped the shared region: grown to hold `values` as place_inputs() writes them and
        `room_after` bytes more after them (the call's outputs). Each growth maps the region again and, on a GPU
        host, registers it with CUDA; the first growth of a region whose pages were not given ahead pins them."""
        if self.region_mapped:
            self.make_room(values, room_after)

    def make_room(self, values: Sequence[Any], room_after: int = 0) -> None:
        """grow_region() before the child's `load` has said whether it mapped the region: the judge's side of a
        growth (mapping, registering with CUDA) then runs beside the child's load instead of after it. Should
        the child not map it, the room is only the judge's memory until the session closes."""
        self.region.reserve(_placed_bytes(tensorfile.memory_size(values), room_after))

    def place_inputs(self, values: Sequence[Any], path: Path, room_after: int = 0) -> int:
        """A checked call's inputs where the child will read them: at the start of the shared region where the
        child mapped it (the bytes they take there), else in the file `path` (0). The region is grown as
        grow_region() grows it, where that was not done first."""
        if self.region_mapped:
            size = tensorfile.memory_size(values)
            # torch's copy, not threads of the judge's own: in a mixed stream on an H200 host, four memmove
            # threads took 0.26 s a trial for 512 MiB and 0.13 s for 256 MiB against 0.07 s and 0.04 s. Large
            # inputs in pinned memory go through the device where the region is registered: no core at all.
            through = torch.device("cuda", self.gpu_index) if self.region.pin and self.gpu_index is not None else None
            written = tensorfile.save_to_memory(self.region.reserve(_placed_bytes(size, room_after))[:size], values,
                                                through)
            if written is not None:
                return written
        tensorfile.save(path, values)
        return 0

    def call(self, inputs: Path, outputs: Path, poison_bytes: list[int], timeout: float,
             settle_s: float = 0.0, region_bytes: int = 0, inputs_bytes: int = 0) -> CallReply:
        """A checked call on the inputs place_inputs() put in the file `inputs`, or the region's first
        `inputs_bytes`. Its outputs go to the file `outputs`, or with `region_bytes` into the shared region,
        grown to hold at least that many first, where they fit there after the inputs: the reply's region_bytes
        says which (where they end)."""
        offered = self._offer(region_bytes)
        request = CallRequest(inputs, outputs, tuple(poison_bytes), settle_s, offered, inputs_bytes)
        return self._request(Stage.CORRECTNESS, request, timeout)

    def _offer(self, region_bytes: int) -> int:
        """The bytes of the shared region a request may use: none unless asked for, else all it has, grown to
        `region_bytes` first."""
        if not region_bytes:
            return 0
        self.region.reserve(region_bytes)
        return self.region.reserved

    def read_sets(self, input_sets: list[Path], timeout: float) -> None:
        """Have the child read the timing sets ahead of a warmup() on the same files, which keeps them."""
        self._request(Stage.TIMING, ReadSetsRequest(tuple(input_sets)), timeout)

    def warmup(self, input_sets: list[Path], params: TimingParams, flush_bytes: int, timeout: float,
               settle_s: float = 0.0) -> Integrity:
        request = WarmupRequest(tuple(input_sets), params, flush_bytes, settle_s)
        with watch().watching(self.hold_page):
            return self._request(Stage.TIMING, request, timeout).integrity

    def time(self, params: TimingParams, timeout: float, keep_outputs: bool = True,
             resumes: bool = False) -> TimedReply:
        """Time the candidate on the input sets and flush buffer given to warmup(); `keep_outputs`: whether the
        child keeps a sample of the timed outputs for timed_outputs(); `resumes`: a further round of one
        interleaved phase, whose sample is drawn from every round."""
        request = TimeRequest(params, keep_outputs, resumes)
        waited = tree_waited_ns(self.child.proc.pid)
        started = time.perf_counter()
        with watch().watching(self.hold_page):
            raw = self._exchange(Stage.TIMING, request, timeout)
        outer = time.perf_counter() - started  # up to the reply's arrival: decoding it is the judge's own work
        after = tree_waited_ns(self.child.proc.pid)
        seen = (after - waited) / 1e6 if waited is not None and after is not None else None
        return TimedReply(self._read(Stage.TIMING, request, raw), outer, seen)

    def timed_outputs(self, outputs_dir: Path, timeout: float, first: int = 0, region_bytes: int = 0
                      ) -> TimedOutputsReply:
        """Have the child write its sample of timed outputs from `first` on, each as [set, scale step, rep,
        *outputs]: into the shared region, grown to hold at least `region_bytes` first, while they fit there,
        else one to `outputs_dir`/timed_{i}.kgt (the reply's `ends` says which)."""
        return self._request(Stage.TIMING, TimedOutputsRequest(outputs_dir, first, self._offer(region_bytes)), timeout)


def _forged(stage: Stage, request: Request[Any], what: str, output: str) -> Failure:
    return Failure(stage, "reply_forged", f"during {_what(request)} the result channel carried {what}. Only the"
                   " harness writes there, with this run's key: the submission wrote to the judge's channel"
                   " (docs/threats.md 18).", detail=_tail(output))


def _what(request: Request[Any]) -> str:
    return {Op.WARM: "starting the run child", Op.LOAD: "loading ModelNew", Op.CALL: "forward()",
            Op.READ_SETS: "reading the timing sets", Op.WARMUP: "warm-up", Op.TIME: "the timing loop",
            Op.TIMED_OUTPUTS: "writing timed outputs"}.get(
        request.OP, "the child")


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "(no message)"


def _tail(text: str, lines: int = 30) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _placed_bytes(inputs_bytes: int, room_after: int) -> int:
    """The region a call's inputs of `inputs_bytes` placed at its start take, with `room_after` bytes after them."""
    return aligned(inputs_bytes) + room_after
