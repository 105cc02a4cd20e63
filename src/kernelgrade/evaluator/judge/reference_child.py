"""The reference, timed in a run child of its own (docs/timing.md, "The reference, timed in full").

The judge's thread shares its process (Python's lock, the allocator, the threads' CPU placement) with the server,
the host's other judges and its own helper threads; the candidate's child shares none of that. Timed in the
judge's thread, KernelBench references graded against themselves through one `kernelgrade serve` with four GPU
judges came out up to 39x "faster" than themselves: networks of many small kernels, whose time is mostly host
dispatch. So the reference is timed as the candidate is: loaded in a run child that never sees submission code,
given the same input set files, warmed up and timed by the same requests, with the judge's clock around each
timed phase. The judge's process only reads the replies."""

from __future__ import annotations

import functools
import os
import shutil
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelgrade.evaluator import timing
from kernelgrade.evaluator.host.reference import Reference
from kernelgrade.evaluator.host.run_children import ChildKind, RunChildren, discard
from kernelgrade.evaluator.host.session import RunSession
from kernelgrade.evaluator.request import Limits, TimingParams
from kernelgrade.evaluator.wire import tensorfile
from kernelgrade.evaluator.wire.replies import TimedReply

MODULE = "reference_model.py"

# Appended to the problem's source. `Model` is constructed after the child seeds torch, as a candidate's ModelNew
# is, so the child's reference holds the same weights as the judge's.
_WRAPPER = '''

import torch as _kernelgrade_torch


class ModelNew(_kernelgrade_torch.nn.Module):
    """The reference above, as the run child loads a candidate (written by the grader, not a submission)."""

    def __init__(self, *args):
        super().__init__()
        self.reference = Model(*args)

    def forward(self, *inputs):
        return self.reference(*inputs)
'''


@dataclass(frozen=True)
class ReferenceRun:
    """One timed run of the reference, and what the judge saw of the child's loop (crosscheck.ReferenceLoop)."""

    raw: timing.RawSamples
    wall_gap_ms: float  # median per-rep (wall - device) time
    overhead_per_rep_ms: float  # the judge's clock around the phase, less the reps' wall times, per rep

    @classmethod
    def of(cls, timed: TimedReply) -> ReferenceRun:
        reply = timed.reported
        raw = timing.RawSamples(reply.device_ms, reply.wall_ms, reply.stop_reason, reply.clock,
                                host_bound_reps=reply.host_bound_reps, flush_ms=reply.flush_ms, hold=reply.hold)
        gap = statistics.median(w - d for w, d in zip(reply.wall_ms, reply.device_ms, strict=True))
        overhead = (timed.outer_seconds * 1000.0 - sum(reply.wall_ms)) / len(reply.wall_ms)
        return cls(raw, gap, overhead)


class ReferenceChild:
    """A run child holding the reference and the timing input sets; `run` times it once, as the child times a
    candidate. Close it (or use it as a context manager): it is discarded, never handed to a submission."""

    def __init__(self, session: RunSession, sets: Sequence[Path], flush_bytes: int, limits: Limits,
                 refill: Callable[[], None]) -> None:
        self.session, self.sets, self.flush_bytes, self.limits = session, list(sets), flush_bytes, limits
        self._read = sum(tensorfile.size(path) for path in self.sets)
        self._refill = refill

    @classmethod
    def loaded(cls, children: RunChildren, kind: ChildKind, reference: Reference, sets: Sequence[Path | list[Any]],
               seed: int, flush_bytes: int, limits: Limits) -> ReferenceChild:
        """A child of `kind` (a warm spare where one waits) with the reference loaded under the weight seed `seed`.
        `sets`: the timing input sets, as files (linked into the child's own dir) or as values (written there).
        The spare taken is replaced once this is closed, after the measurement: a spare's start holds the quiet
        lock the measurement takes, so replacing it at once would make the measurement wait for a start.
        Raises StageFailed where the child cannot start or load it."""
        session, refill = children.take(kind, refill=False), functools.partial(children.refill, kind)
        try:
            files = [_placed(session.work_dir, k, s) for k, s in enumerate(sets)]
            module, init_inputs = session.work_dir / MODULE, session.work_dir / "reference_init_inputs.kgt"
            module.write_text(reference.problem.source + _WRAPPER)
            tensorfile.save(init_inputs, reference.init_inputs)
            session.load(module, init_inputs, seed, kind.device, (), limits.load_s)
        except BaseException:
            discard(session)
            refill()
            raise
        return cls(session, files, flush_bytes, limits, refill)

    def run(self, params: TimingParams) -> ReferenceRun:
        """Warm up, then one timed phase under `params`."""
        self.session.warmup(self.sets, params, self.flush_bytes, Limits.moving(self.limits.timing_s, self._read))
        return ReferenceRun.of(self.session.time(params, self.limits.timing_s, keep_outputs=False))

    def close(self) -> None:
        discard(self.session)
        self._refill()

    def __enter__(self) -> ReferenceChild:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def _placed(work_dir: Path, index: int, values: Path | list[Any]) -> Path:
    """Timing set `index` as a file in the child's own dir (a child sees no other): a hard link to the file the
    candidate's child reads where both dirs are on one file system (a child's dir is read-only to it, so neither
    can change what the other reads), else a copy; values are written there."""
    target = work_dir / f"reference_timing_{index}.kgt"
    if not isinstance(values, Path):
        tensorfile.save(target, values)
        return target
    try:
        os.link(values, target)
    except OSError:
        shutil.copyfile(values, target)
    return target
