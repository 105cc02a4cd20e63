"""The reference, timed in a run child of its own (docs/timing.md, "The reference, timed in full").

The judge's thread shares its process (Python's lock, the allocator, the threads' CPU placement) with the server,
the host's other judges and its own helper threads; the candidate's child shares none of that. Timed in the
judge's thread, KernelBench references graded against themselves through one `kernelgrade serve` with four GPU
judges came out up to 39x "faster" than themselves: networks of many small kernels, whose time is mostly host
dispatch. So the reference is timed as the candidate is: loaded in a run child that never sees submission code,
given the same input set files, warmed up and timed by the same requests, with the judge's clock around each
timed phase. The judge's process only reads the replies."""

from __future__ import annotations

import dataclasses
import functools
import os
import statistics
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelgrade.evaluator import timing
from kernelgrade.evaluator.host.reference import Reference
from kernelgrade.evaluator.host.run_children import ChildKind, KeptChild, RunChildren, discard
from kernelgrade.evaluator.host.session import RunSession
from kernelgrade.evaluator.host.trial_store import problem_version
from kernelgrade.evaluator.integrity.crosscheck import ReferenceLoop, wall_gaps
from kernelgrade.evaluator.request import Limits, TimingParams
from kernelgrade.evaluator.wire import tensorfile
from kernelgrade.evaluator.wire.replies import TimedReply

MODULE = "reference_model.py"
_SET_PREFIX, _SET_SUFFIX = "reference_timing_", ".kgt"
# A reference's child is kept for the next evaluation of its problem only while what it holds between evaluations
# is small: its last timing sets and outputs stay in its memory (on the device) until its next warm-up lets them
# go. Small problems are where a child's start and load are a large part of the verdict; a larger problem's
# child is discarded, as every child was before.
KEEP_BYTES = 256 * 1024**2
# A kept child serves at most this many evaluations and is then replaced, so whatever grows in a long-lived
# process (its log, the allocator's fragments) stays bounded; that costs 1/64 of a child's start per verdict.
KEEP_USES = 64

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
    wall_gap_ms: float  # median per-rep (wall - device - waited for a CPU) time
    overhead_per_rep_ms: float  # the judge's clock around the phase, less the reps' wall times, per rep
    tail_ms: float = 0.0  # median device time after each rep's end event (timing.Rep.tail_ms)

    @classmethod
    def of(cls, timed: TimedReply) -> ReferenceRun:
        reply = timed.reported
        raw = timing.RawSamples(reply.device_ms, reply.wall_ms, reply.stop_reason, reply.clock,
                                host_bound_reps=reply.host_bound_reps, flush_ms=reply.flush_ms, hold=reply.hold,
                                tail_ms=reply.tail_ms, waited_ms=reply.waited_ms)
        gap = statistics.median(wall_gaps(timed))
        overhead = (timed.outer_seconds * 1000.0 - sum(reply.wall_ms)) / len(reply.wall_ms)
        return cls(raw, gap, overhead, statistics.median(reply.tail_ms) if reply.tail_ms else 0.0)

    def around(self, after: ReferenceRun) -> ReferenceLoop:
        """The loop a candidate's phase between this run and `after` is checked against: the smaller wall gap and
        tail of the two, the larger per-rep overhead, the median flush of both."""
        flush_ms = self.raw.flush_ms + after.raw.flush_ms
        return ReferenceLoop(min(self.wall_gap_ms, after.wall_gap_ms),
                             max(self.overhead_per_rep_ms, after.overhead_per_rep_ms),
                             statistics.median(flush_ms) if flush_ms else 0.0, min(self.tail_ms, after.tail_ms))

    def beside(self, loop: ReferenceLoop) -> ReferenceLoop:
        """`loop` as this run, timed beside a candidate's phase, shows it: its wall gap and tail, and the larger
        per-rep overhead of the two."""
        return dataclasses.replace(loop, wall_gap_ms=self.wall_gap_ms, tail_ms=self.tail_ms,
                                   overhead_per_rep_ms=max(loop.overhead_per_rep_ms, self.overhead_per_rep_ms))


class ReferenceChild:
    """A run child holding the reference and the timing input sets; `run` times it once, as the child times a
    candidate. Close it (or use it as a context manager): it is kept for the next evaluation of the same problem
    where it may be (KEEP_BYTES, KEEP_USES), else discarded; it is never handed to a submission."""

    def __init__(self, session: RunSession, limits: Limits, done: Callable[[ReferenceChild, bool], None],
                 how: str) -> None:
        """`how`: how the child came to hold the reference (`kept`, `loaded`), as the result's extra says it."""
        self.session, self.limits, self.how = session, limits, how
        self.sets: list[Path] = []
        self.flush_bytes = self._read = 0
        self._done = done

    @classmethod
    def loaded(cls, children: RunChildren, kind: ChildKind, reference: Reference, sets: Sequence[Path | list[Any]],
               seed: int, flush_bytes: int, limits: Limits, started: ReferenceChild | None = None) -> ReferenceChild:
        """A child of `kind` with the reference loaded under the weight seed `seed` (`started`, or one `started`
        now), given the timing input sets `sets`: as files (linked into the child's own dir) or as values
        (written there). Raises StageFailed where the child cannot start or load it."""
        child = started or cls.started(children, kind, reference, seed, limits)
        try:
            child.given(sets, flush_bytes)
        except BaseException:
            child.close(failed=True)
            raise
        return child

    @classmethod
    def started(cls, children: RunChildren, kind: ChildKind, reference: Reference, seed: int, limits: Limits,
                spare: RunSession | None = None) -> ReferenceChild:
        """A child of `kind` with the reference loaded under the weight seed `seed`, no timing sets given yet: the
        one kept from the last evaluation of this problem where there is one, else `spare` (a warm spare taken),
        else a warm spare taken now. A spare taken is replaced once this is closed, after the measurement: a
        spare's start holds the quiet lock the measurement takes, so replacing it at once would make the
        measurement wait for a start. Raises StageFailed where the child cannot start or load it."""
        key = child_key(reference, seed, kind)
        kept = None if spare else children.reclaim(key)
        session = kept.session if kept else spare or children.take(kind, refill=False)
        done = functools.partial(_done, children, key, kept.uses + 1 if kept else 1, reference,
                                 None if kept else functools.partial(children.refill, kind))
        if kept is None:
            try:
                _load(session, reference, seed, kind, limits)
            except BaseException:
                discard(session)
                children.refill(kind)
                raise
        return cls(session, limits, done, "kept" if kept else "loaded")

    def given(self, sets: Sequence[Path | list[Any]], flush_bytes: int) -> None:
        """The timing input sets of this evaluation, in place of any an earlier one gave, and its flush size. The
        same files given again are left as they are: linked again, they would be new to the child, which keeps
        sets it read only from the very files it read them from."""
        self.flush_bytes = flush_bytes
        if _linked(sets, self.sets):
            return
        _clear_sets(self.session.work_dir)
        self.sets = [_placed(self.session.work_dir, k, s) for k, s in enumerate(sets)]
        self._read = sum(tensorfile.size(path) for path in self.sets)

    def read_ahead(self, sets: Sequence[Path]) -> None:
        """The timing input sets given and read by the child ahead of the timing stage, which gives it the same
        files (given()); its warm-up keeps them where they are unchanged. Raises StageFailed where the child
        cannot read them."""
        self.given(sets, self.flush_bytes)
        self.session.read_sets(self.sets, Limits.moving(self.limits.timing_s, self._read))

    def run(self, params: TimingParams) -> ReferenceRun:
        """Warm up, then one timed phase under `params`."""
        self.warm_up(params)
        return ReferenceRun.of(self.time(params))

    def warm_up(self, params: TimingParams) -> None:
        """The warm-up before a timed phase under `params`, on the sets given (kept where it read them already)."""
        self.session.warmup(self.sets, params, self.flush_bytes, Limits.moving(self.limits.timing_s, self._read))

    def time(self, params: TimingParams) -> TimedReply:
        """One timed phase without a warm-up first: a round of an interleaved phase, after a run."""
        return self.session.time(params, self.limits.timing_s, keep_outputs=False)

    @property
    def holds_bytes(self) -> int:
        """The timing sets' bytes: what the child holds between evaluations, beside the reference's outputs."""
        return self._read

    def close(self, failed: bool = False) -> None:
        """`failed`: the evaluation ended in an exception while the child was in use; it is not kept."""
        self._done(self, failed)

    def __enter__(self) -> ReferenceChild:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        self.close(failed=kind is not None)


def child_key(reference: Reference, seed: int, kind: ChildKind) -> tuple[str, int, ChildKind]:
    """What a kept child of the reference is kept under: the problem's version, the weight seed it was loaded
    with, and the kind of child (device and build environment)."""
    return problem_version(reference.problem), seed, kind


def _load(session: RunSession, reference: Reference, seed: int, kind: ChildKind, limits: Limits) -> None:
    module, init_inputs = session.work_dir / MODULE, session.work_dir / "reference_init_inputs.kgt"
    module.write_text(reference.problem.source + _WRAPPER)
    tensorfile.save(init_inputs, reference.init_inputs)
    session.load(module, init_inputs, seed, kind.device, (), limits.load_s)


def _done(children: RunChildren, key: Hashable, uses: int, reference: Reference, refill: Callable[[], None] | None,
          child: ReferenceChild, failed: bool) -> None:
    """Keeps the child for the next evaluation of its problem, or discards it; then replaces the spare taken. A
    reference whose output size the judge has not yet seen (no trial computed) is not known to be small."""
    small = reference.output_bytes > 0 and child.holds_bytes + reference.output_bytes <= KEEP_BYTES
    if failed or not small or uses >= KEEP_USES:
        discard(child.session)
    else:
        children.keep(KeptChild(key, child.session, uses))
    if refill is not None:
        refill()


def expect_child(children: RunChildren, reference: Reference, seed: int, kind: ChildKind) -> None:
    """A spare is started now for the reference's child of this evaluation, unless the judge keeps one loaded."""
    if not children.keeps(child_key(reference, seed, kind)):
        children.expect(kind)


def _clear_sets(work_dir: Path) -> None:
    """The timing sets a kept child was given for an evaluation before: their links would keep those files."""
    for path in work_dir.glob(f"{_SET_PREFIX}*{_SET_SUFFIX}"):
        tensorfile.remove(path)


def _linked(sets: Sequence[Path | list[Any]], placed: Sequence[Path]) -> bool:
    """Whether `placed` are links to the files `sets`, one for one (a link keeps its file's inode in use, so
    another file written under a set's name later is never taken for it)."""
    if len(sets) != len(placed) or not placed:
        return False
    try:
        return all(isinstance(s, Path) and os.path.samefile(s, p) for s, p in zip(sets, placed, strict=True))
    except OSError:
        return False


def _placed(work_dir: Path, index: int, values: Path | list[Any]) -> Path:
    """Timing set `index` as a file in the child's own dir (a child sees no other): a hard link to the file the
    candidate's child reads where both dirs are on one file system (a child's dir is read-only to it, so neither
    can change what the other reads), else a copy; values are written there."""
    target = work_dir / f"{_SET_PREFIX}{index}{_SET_SUFFIX}"
    if not isinstance(values, Path):
        tensorfile.save(target, values)
    else:
        tensorfile.link(values, target)
    return target
