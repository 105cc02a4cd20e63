"""The timing stage: the reference timed in a run child of its own just before and just after the candidate is
timed in its child, on the same device, with the same loop and fresh inputs (docs/timing.md); then the
cross-checks of the child's timed phase, the re-check of timed outputs, the roofline floor and the speedup.
"""

from __future__ import annotations

import dataclasses
import functools
import statistics
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from kernelgrade.evaluator import timing
from kernelgrade.evaluator.device_cache import leave_room
from kernelgrade.evaluator.host.reference import Reference, save_timing_sets
from kernelgrade.evaluator.host.run_children import ChildKind
from kernelgrade.evaluator.host.session import RunSession, StageFailed
from kernelgrade.evaluator.integrity.crosscheck import (
    ReferenceLoop,
    flush_corrected,
    roofline_findings,
    speedup_findings,
    timing_findings,
)
from kernelgrade.evaluator.integrity.roofline import floor_for
from kernelgrade.evaluator.judge import interleaved, reference_timing
from kernelgrade.evaluator.judge.job import Job
from kernelgrade.evaluator.judge.record import Record
from kernelgrade.evaluator.judge.reference_ahead import ReferenceAhead
from kernelgrade.evaluator.judge.reference_child import ReferenceChild, ReferenceRun
from kernelgrade.evaluator.judge.settle import settle_s
from kernelgrade.evaluator.judge.timed_outputs import recheck_timed_outputs
from kernelgrade.evaluator.request import Limits, TimingParams
from kernelgrade.evaluator.result import Finding, Severity, Stage
from kernelgrade.evaluator.speedup_interval import imprecision_findings
from kernelgrade.evaluator.timing_room import TimingFootprint, sets_that_fit
from kernelgrade.evaluator.wire import tensorfile
from kernelgrade.evaluator.wire.replies import TimedReply

# The findings a loaded host can produce now and then; more timed phases confirm them before they stand. Before
# the phase is timed again, the reference is too, so that both sides' loops come from the same moment of the
# host's load; a cheat's gap shows in every phase whatever the load.
# The judge's clock around the phase against the reps' times. On a 2-core CI host whose other test process was
# building, an honest CPU kernel's three phases each had 1.3 s unaccounted for against an allowance of 0.46 s
# from a reference loop timed seconds before (its speedup interval, 0.03-0.05x, showed the load).
INCONSISTENT = "timing_inconsistent"
# The candidate's per-rep gap between wall and device time against the reference's. An honest 2 ms tiled
# matmul got it on an H200 host; beside a KernelBench sweep on the host's other GPUs, 1 of 40 honest verdicts
# of a prebuilt stream came out flagged, with the reference timed in the judge or in a child of its own.
OUTSIDE_STREAM = "work_outside_timed_stream"
CONFIRMED = frozenset({INCONSISTENT, OUTSIDE_STREAM})
# Timed phases after one with time unaccounted for, before that is flagged. One was not enough on a 2-core
# CI host running two CPU workers: 4 of 26 honest submissions came out flagged in one run (the finding was
# not recorded; this is the only flag honest code can get there), most likely the other worker's child
# starting (seconds of importing torch) beside both phases. A cheat's gap shows in every phase.
CONFIRM_PHASES = 2
# A confirmation: the reference's loop and the candidate's phase timed again, given the loop so far; the phase and
# the loop to check it against.
Again = Callable[[ReferenceLoop], tuple[TimedReply, ReferenceLoop]]


@dataclass(frozen=True)
class TimingSets:
    """The timing input sets as written for the child, and the flush size used: the compiled baseline is
    timed on exactly these."""

    paths: tuple[Path, ...]
    flush_bytes: int


class TimingInputs:
    """The timing input sets, fresh for every evaluation, made and written in the background while the
    correctness trials run: for a problem with large inputs that is seconds of CPU work."""

    def __init__(self, job: Job, reference: Reference) -> None:
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="timing-inputs")
        self._unwanted = threading.Event()
        wanted = job.timing_params.input_sets
        self._made = self._pool.submit(save_timing_sets, reference, job.work_dir, wanted, job.request.trials.seed,
                                       job.secret, self._unwanted,
                                       functools.partial(_sets_the_device_holds, job.device, reference, wanted))

    def result(self) -> tuple[list[list[Any]], list[Path]]:
        return self._made.result()

    def files_once_written(self) -> list[Path]:
        """The sets' files once written, for the reference's child to read ahead; none where the evaluation
        ended before timing or they could not be written (the timing stage reports why)."""
        try:
            _sets, paths = self._made.result()
        except Exception:
            return []
        return [] if self._unwanted.is_set() else paths

    def close(self) -> None:
        """Begins no further set (an evaluation that ended before timing, an incorrect one say, wants none) and
        waits for the one being written, so the job's dir is not removed under it."""
        self._unwanted.set()
        self._pool.shutdown(wait=True, cancel_futures=True)


def time_candidate(job: Job, record: Record, session: RunSession, reference: Reference,
                   inputs: TimingInputs, kind: ChildKind, ahead: ReferenceAhead) -> TimingSets:
    """`kind`: the candidate's child's; the reference's child is one of the same kind: the one `ahead` loaded
    during the correctness trials, else a warm spare where one waits, taken and loaded before the judge takes its
    quiet lock, which a spare's start waits for."""
    params = job.timing_params
    with job.in_stage(Stage.TIMING, "timing"):
        with job.timed("timing:inputs_wait"):
            sets, paths = inputs.result()
        sets, paths = _in_room(job, record, reference, sets, paths)
        timed = TimingSets(tuple(paths), params.flush_bytes or timing.default_flush_bytes(job.device))
        with _reference_child(job, record, reference, kind, timed, ahead) as in_child, _alone_on_device(job):
            candidate, loop, again = _time_both(job, record, session, reference, in_child, timed)
            candidate = confirmed(job, record, candidate, loop, again)
        samples, flush_findings = flush_corrected(candidate, loop)
        record.note(flush_findings)
        reported = candidate.reported
        record.candidate_timing = timing.summarize(samples, reported.stop_reason, reported.wall_ms,
                                                   reported.host_bound_reps)
        # Nothing is timed from here on: the next spare may warm up beside the re-check.
        if job.request.trials.recheck_timed_outputs:
            with job.timed("timing:recheck"):
                recheck_timed_outputs(job, record, session, reference, sets)
        _check_roofline(job, record)
        record.note(speedup_findings(record.speedup()))
        record.note(imprecision_findings(record.reference_timing, record.candidate_timing))
        job.report(Stage.TIMING, "timing", 3, 3)
    return timed


def _sets_the_device_holds(device: torch.device, reference: Reference, wanted: int, set_bytes: int) -> int:
    """The most timing sets both run children could hold on the whole device: no more are written (a 16 GiB
    set is seconds of disk). What is free when timing starts cuts them further (_in_room)."""
    if device.type != "cuda":
        return wanted
    _free, total = torch.cuda.mem_get_info(device)
    return sets_that_fit(TimingFootprint(set_bytes, reference.output_bytes), wanted, total)


def _in_room(job: Job, record: Record, reference: Reference, sets: list[list[Any]],
             paths: list[Path]) -> tuple[list[list[Any]], list[Path]]:
    """The first of the timing sets that both run children can hold on the device at once (timing_room.py); on
    the CPU, all of them. The judge hands back its unused cache first, for the reference's child."""
    if job.device.type != "cuda" or not paths:
        return sets, paths
    footprint = TimingFootprint(max(tensorfile.size(path) for path in paths), reference.output_bytes)
    fit, wanted = sets_that_fit(footprint, len(paths), leave_room(job.device)), job.timing_params.input_sets
    if fit < wanted:  # fewer may have been written already (_sets_the_device_holds)
        record.add(Finding("timing_sets_reduced", Severity.INFO,
            f"timed on {fit} of {wanted} input sets: the candidate's and the reference's run children could not"
            f" both hold {wanted} sets of {footprint.set_bytes / 1024**3:.1f} GiB (and their outputs) on the"
            " device at once. Every rep still draws a fresh random scale for the set's float inputs."))
    return sets[:fit], paths[:fit]


@contextmanager
def _reference_child(job: Job, record: Record, reference: Reference, kind: ChildKind, timed: TimingSets,
                     ahead: ReferenceAhead) -> Iterator[ReferenceChild]:
    job.report(Stage.TIMING, "loading the reference in a run child of its own", 0, 3)
    with job.timed("timing:reference_child"):
        try:
            child = ReferenceChild.loaded(job.warm.children, kind, reference, timed.paths, job.request.trials.seed,
                                          timed.flush_bytes, job.request.limits, ahead.child())
        except StageFailed as failed:
            raise _grader_failed(failed) from None
    record.reference_child = ahead.described(child)
    with child:
        yield child


def _grader_failed(failed: StageFailed) -> RuntimeError:
    """The reference's child is the grader's: its failure is never the submission's verdict (retried later)."""
    return RuntimeError(f"the reference's own run child failed: {failed.failure.message}\n{failed.failure.detail}")


@contextmanager
def _alone_on_device(job: Job) -> Iterator[None]:
    """No spare run child of this judge touches the device while it measures, nor, on the CPU, one of another
    judge on the host (run_children.py); waiting for one that is creating its context is part of this job's
    device time."""
    cpu = job.device.type == "cpu"
    if cpu:  # builds on the host hold it off until they end: the progress line says what the wait is for
        job.report(Stage.TIMING, "timing, once no build runs on the host")
    with ExitStack() as held:
        with job.timed("timing:quiet_wait"):
            held.enter_context(job.warm.children.quiet(cpu=cpu))
        yield


def _time_both(job: Job, record: Record, session: RunSession, reference: Reference, in_child: ReferenceChild,
               timed: TimingSets) -> tuple[TimedReply, ReferenceLoop, Again]:
    """Reference, candidate, reference again: each reference run a drift check against its stored distribution,
    or a full measurement (reference_timing.py); then, where their time is host dispatch, both in turn on one CPU
    (interleaved.py). Also the reference's loop the candidate's phase is checked against, and how both are timed
    again for a confirmation."""
    params = dataclasses.replace(job.timing_params, input_sets=len(timed.paths))
    how = reference_timing.plan(reference, params, timed.flush_bytes, job.device)

    reference_run = functools.partial(_reference_run, job, in_child)
    job.report(Stage.TIMING, "timing the reference", 0, 3)
    before = reference_run("timing:reference", how.params(params))
    candidate = _time_candidate(job, record, session, timed, settle_s(statistics.median(before.raw.wall_ms) / 1e3))
    job.report(Stage.TIMING, "timing the reference again", 2, 3)
    after = reference_run("timing:reference_again", how.params(params))
    loop = before.around(after)
    if interleaved.wanted(params, candidate, before):
        # The first phase's samples give way to the rounds'; what it showed of the call (a patch, a flag) stands.
        record.note(f for f in timing_findings(candidate, loop) if f.code not in CONFIRMED)
        in_turns = functools.partial(_in_turns, job, record, session, in_child, params, timed.flush_bytes,
                                     interleaved.call_ms(candidate, before))
        return *in_turns(loop), in_turns

    def full_again() -> timing.RawSamples:
        job.report(Stage.TIMING, "timing the reference in full: it drifted from its stored timing", 2, 3)
        return reference_run("timing:reference_full", params).raw

    reported = reference_timing.concluded(how, reference, params, before.raw, after.raw, full_again)
    method = timing.method_record(params, timed.flush_bytes, job.device, candidate.reported.l2.status,
                                  f"reference: {before.raw.hold}; candidate: {candidate.reported.hold}")
    record.method = dataclasses.replace(method, reference_placement=reported.placement)
    record.reference_timing = reported.stats
    return candidate, loop, functools.partial(_phase_again, job, session, in_child)


def _in_turns(job: Job, record: Record, session: RunSession, in_child: ReferenceChild, params: TimingParams,
              flush_bytes: int, call_ms: float, loop: ReferenceLoop) -> tuple[TimedReply, ReferenceLoop]:
    """Both sides timed in turn, on one CPU on a GPU host; the reference's pooled rounds are its reported timing,
    and give the loop the candidate's rounds are checked against."""
    job.report(Stage.TIMING, "timing both sides in turn on one CPU: their time is the host's dispatch", 2, 3)
    with job.timed("timing:interleaved"):
        turns = interleaved.taken(session, in_child, params, call_ms, job.request.limits.timing_s,
                                  one_cpu=job.device.type == "cuda")
    theirs, ours = turns.reference.raw, turns.candidate.reported
    record.reference_timing = timing.summarize(theirs.device_ms, theirs.stop_reason, theirs.wall_ms,
                                               theirs.host_bound_reps)
    method = timing.method_record(params, flush_bytes, job.device, ours.l2.status,
                                  f"reference: {theirs.hold}; candidate: {ours.hold}")
    record.method = dataclasses.replace(method, reference_placement=turns.described)
    # Checked against the reference's own rounds: both sides share the placement and the requests.
    return turns.candidate, turns.reference.beside(loop)


def _reference_run(job: Job, in_child: ReferenceChild, label: str, params: TimingParams) -> ReferenceRun:
    """The reference's warm-up and timed phase, under `label`_warmup and `label` in the stage seconds."""
    try:
        with job.timed(f"{label}_warmup"):
            in_child.warm_up(params)
        with job.timed(label):
            return ReferenceRun.of(in_child.time(params))
    except StageFailed as failed:
        raise _grader_failed(failed) from None


def _phase_again(job: Job, session: RunSession, in_child: ReferenceChild,
                 loop: ReferenceLoop) -> tuple[TimedReply, ReferenceLoop]:
    """The candidate's phase timed again for a confirmation, the reference's loop first, beside it."""
    job.report(Stage.TIMING, "timing the reference again, beside the candidate", 2, 3)
    loop = _reference_run(job, in_child, "timing:reference_confirm", job.timing_params).beside(loop)
    job.report(Stage.TIMING, "timing the candidate again", 2, 3)
    return session.time(job.timing_params, job.request.limits.timing_s), loop


def _time_candidate(job: Job, record: Record, session: RunSession, timed: TimingSets, settle: float) -> TimedReply:
    """The candidate's warm-up, then its timed phase, in its run child."""
    params, limits = job.timing_params, job.request.limits
    job.report(Stage.TIMING, "timing the candidate", 1, 3)
    leave_room(job.device)  # the child's input sets and outputs
    with job.timed("timing:candidate_warmup"):
        read = sum(tensorfile.size(path) for path in timed.paths)
        warmed = session.warmup(list(timed.paths), params, timed.flush_bytes, Limits.moving(limits.timing_s, read),
                                settle)
    record.note(record.child_reported(warmed))
    with job.timed("timing:candidate"):
        return session.time(params, limits.timing_s)


def confirmed(job: Job, record: Record, candidate: TimedReply, loop: ReferenceLoop, again: Again) -> TimedReply:
    """Notes the timed phase's findings. Time unaccounted for between reps, or a wall-time gap beyond the
    reference's, is timed again (`again`, up to CONFIRM_PHASES more times) before it is flagged: a loaded host
    can stall the child now and then, a patched clock or work hidden between reps or on a side stream does it
    every time. `again` times the reference's loop first, so that both sides' loops come from the same moment of
    the host's load. The last phase's samples are the ones reported; every other finding of the earlier phases
    stands."""
    findings = timing_findings(candidate, loop)
    for _ in range(CONFIRM_PHASES):
        if CONFIRMED.isdisjoint(f.code for f in findings):
            break
        record.note(f for f in findings if f.code not in CONFIRMED)
        candidate, loop = again(loop)
        findings = timing_findings(candidate, loop)
    record.note(findings)
    return candidate


def _check_roofline(job: Job, record: Record) -> None:
    if job.device.type == "cuda" and record.candidate_timing is not None:
        record.roofline = floor_for(job.request.problem, torch.cuda.get_device_name(job.device))
        record.note(roofline_findings(record.candidate_timing.median_ms, record.roofline))

