"""The judge's cross-checks of the child's claims, on synthetic replies: the outer clock (and its second
timed phase before a flag), the per-rep wall/event gap, the integrity report, the extension record and the
/proc counts."""

from __future__ import annotations

from kernelgrade.evaluator import Severity
from kernelgrade.evaluator.host.warm import Warm
from kernelgrade.evaluator.integrity.crosscheck import (
    ReferenceLoop,
    extension_findings,
    flush_corrected,
    integrity_findings,
    process_findings,
    timing_findings,
)
from kernelgrade.evaluator.integrity.proctree import TreeCount
from kernelgrade.evaluator.judge.job import Job
from kernelgrade.evaluator.judge.record import Record
from kernelgrade.evaluator.judge.timing_stage import CONFIRM_PHASES, confirmed
from kernelgrade.evaluator.sandbox.launcher import SubprocessLauncher
from kernelgrade.evaluator.wire.replies import Extensions, Integrity, L2Reset, TimedReply, TimeReply
from kernelgrade.problems import find_builtin
from tests.conftest import RequestFactory

CLEAN = Integrity((), (), 0)
LOOP = ReferenceLoop(wall_gap_ms=0.05, overhead_per_rep_ms=0.3)


def timed(device_ms: float, wall_ms: float, reps: int, outer_ms: float, **extra: object) -> TimedReply:
    reported = TimeReply((device_ms,) * reps, (wall_ms,) * reps, "target_precision", "cuda_event", CLEAN,
                         **extra)  # type: ignore[arg-type]
    return TimedReply(reported, outer_ms / 1000.0)


def codes(reply: TimedReply, loop: ReferenceLoop = LOOP) -> set[str]:
    return {f.code for f in timing_findings(reply, loop)}


def test_an_honest_run_raises_nothing() -> None:
    # 40 reps of 2.7 ms, with the reference's per-rep overhead and a few ms of fixed cost.
    assert codes(timed(2.7, 2.75, 40, 40 * (2.75 + 0.3) + 5)) == set()


def test_time_the_child_did_not_report_is_flagged() -> None:
    # The child says 40 reps of 0.27 ms; the judge's clock saw ten times that.
    assert "timing_inconsistent" in codes(timed(0.27, 0.28, 40, 40 * (2.75 + 0.3)))


def test_loop_noise_within_the_allowance_is_not_flagged() -> None:
    # Per-rep overhead three times the reference's on a busy host is within the allowance.
    assert codes(timed(2.7, 2.75, 40, 40 * (2.75 + 0.9) + 20)) == set()


def test_reps_whose_flush_is_clean_keep_their_event_time() -> None:
    loop = ReferenceLoop(0.05, 0.3, flush_ms=0.085)
    reply = timed(1.0, 1.05, 4, 10.0, flush_ms=(0.085, 0.087, 0.084, 0.086))
    assert flush_corrected(reply, loop) == (reply.reported.device_ms, [])


def test_work_started_during_the_flush_is_counted_from_the_flush() -> None:
    # Two reps' flushes ran 0.08 ms long: the call's side-stream kernel ran beside them, before the start
    # event; those reps are timed from the flush's start, less the judge's clean flush.
    loop = ReferenceLoop(0.05, 0.3, flush_ms=0.085)
    reply = timed(0.92, 1.05, 4, 10.0, flush_ms=(0.165, 0.086, 0.165, 0.085))
    samples, findings = flush_corrected(reply, loop)
    assert [round(s, 3) for s in samples] == [1.0, 0.92, 1.0, 0.92]
    assert [(f.code, f.severity) for f in findings] == [("work_during_flush", Severity.INFO)]


def test_no_flush_times_no_correction() -> None:
    reply = timed(1.0, 1.05, 4, 10.0)
    assert flush_corrected(reply, ReferenceLoop(0.05, 0.3)) == (reply.reported.device_ms, [])


def test_work_after_the_end_event_is_flagged() -> None:
    # Events see 0.1 ms, a device-wide synchronize waits 17 ms: another stream did the work.
    assert "work_outside_timed_stream" in codes(timed(0.1, 17.0, 40, 40 * 17.3))


def test_unjoined_work_still_running_after_the_end_event_is_flagged_where_the_wall_gap_misses_it() -> None:
    # A held stream's flush waited behind a side stream's matmul and absorbed all of it but its last wave:
    # the wall gap is within the slack, but the device stayed busy 0.2 ms after each end event.
    loop = ReferenceLoop(0.05, 0.3, flush_ms=0.085, tail_ms=0.01)
    reply = timed(0.01, 0.3, 40, 40 * 0.6, tail_ms=(0.21,) * 40)
    found = {f.code: f for f in timing_findings(reply, loop)}
    assert found["work_outside_timed_stream"].severity is Severity.FLAG
    assert "0.200 ms" in found["work_outside_timed_stream"].message


def test_a_tail_like_the_references_is_not_flagged() -> None:
    loop = ReferenceLoop(0.05, 0.3, flush_ms=0.085, tail_ms=0.012)
    tails = (0.01, 0.9, 0.02, 0.011) * 10  # a busy host's occasional late wake-up moves the median little
    assert codes(timed(2.7, 2.75, 40, 40 * 3.05, tail_ms=tails), loop) == set()
    assert codes(timed(2.7, 2.75, 40, 40 * 3.05), loop) == set()  # no tails: a CPU phase


def test_a_long_calls_late_wake_up_is_not_flagged() -> None:
    # seed_000 on an H100: a 17 ms kernel against a 2.7 ms reference, the candidate's wake-up from its longer
    # wait 0.094 ms later than the reference's in the median; 0.4 ms left after a 17 ms call still is.
    loop = ReferenceLoop(0.05, 0.3, flush_ms=0.085, tail_ms=0.014)
    assert codes(timed(17.0, 17.1, 40, 40 * 17.4, tail_ms=(0.108,) * 40), loop) == set()
    assert "work_outside_timed_stream" in codes(timed(17.0, 17.1, 40, 40 * 17.4, tail_ms=(0.4,) * 40), loop)


def _starved(seen_ms: float | None, threads: int = 0) -> TimedReply:
    """Reference 88 of KernelBench level 2 against itself on a host busy beside it: 3.2 ms of device time, a
    held stream released 2.2 ms late in most reps because the timing thread waited that long for a CPU."""
    integrity = Integrity((), (), threads)
    reported = TimeReply((3.2,) * 40, (5.4,) * 40, "target_precision", "cuda_event", integrity,
                         waited_ms=(2.2,) * 40)
    return TimedReply(reported, 40 * 5.7 / 1000.0, seen_ms)


def test_a_wall_gap_that_is_the_timing_threads_wait_for_a_cpu_is_not_flagged() -> None:
    assert codes(_starved(seen_ms=40 * 2.2 + 3.0)) == set()


def test_a_wait_the_judge_did_not_see_or_that_the_calls_threads_may_have_caused_stays_in_the_gap() -> None:
    assert "work_outside_timed_stream" in codes(_starved(seen_ms=10.0))  # the child claims more than was seen
    assert "work_outside_timed_stream" in codes(_starved(seen_ms=None))  # /proc could not be read
    assert "work_outside_timed_stream" in codes(_starved(seen_ms=100.0, threads=2))  # it started threads


def test_a_clock_rebound_during_reps_and_persisting_l2_are_flagged() -> None:
    reply = timed(2.7, 2.75, 40, 40 * 3.05, clock_tampered_reps=3, l2=L2Reset("reset", 1 << 20))
    found = {f.code: f for f in timing_findings(reply, LOOP)}
    assert found["timer_patched"].severity is Severity.FLAG and "3 of 40" in found["timer_patched"].message
    assert found["l2_persistence"].severity is Severity.FLAG


def test_integrity_report_findings() -> None:
    integrity = Integrity(("time.perf_counter", "builtins.isinstance"), ("cuda.matmul.allow_tf32",), 2,
                          ("1 torch-dispatch mode(s)",), 4096, Extensions(tampered=True))
    found = {f.code: f for f in integrity_findings(integrity)}
    assert found["timer_patched"].message.endswith("time.perf_counter")
    assert "builtins.isinstance" in found["harness_patched"].message
    assert "sys.setprofile" in found["harness_patched"].message
    assert {"precision_flags_changed", "torch_mode_installed", "l2_persistence"} <= set(found)
    assert found["background_threads"].severity is Severity.REVIEW


def test_extension_findings() -> None:
    built = ("kg_ext",)
    assert extension_findings(Extensions(built, ("kg_ext.run",)), uses_torch_ops=False) == []
    never = extension_findings(Extensions(built), uses_torch_ops=False)
    assert [(f.code, f.severity) for f in never] == [("extension_never_called", Severity.FLAG)]
    at_load = extension_findings(Extensions(built, called_at_load=("kg_ext.capture",)), uses_torch_ops=False)
    assert [(f.code, f.severity) for f in at_load] == [("extension_not_called_in_forward", Severity.REVIEW)]
    raised = extension_findings(Extensions(built, ("kg_ext.run",), ("kg_ext.run",)), uses_torch_ops=False)
    assert [f.code for f in raised] == ["kernel_failed_fallback"]
    # A fast path that raises and a slower kernel of the submission's own that completes is not a fallback.
    own = extension_findings(Extensions(built, ("kg_ext.fast", "kg_ext.slow"), ("kg_ext.fast",),
                                        returned=("kg_ext.slow",)), uses_torch_ops=False)
    assert [(f.code, f.severity) for f in own] == [("kernel_raised", Severity.REVIEW)]
    # Operators registered with TORCH_LIBRARY are called through torch.ops, which the watch cannot see.
    assert extension_findings(Extensions(built), uses_torch_ops=True) == []
    assert extension_findings(Extensions(), uses_torch_ops=False) == []


def test_process_findings_compare_with_the_baseline() -> None:
    baseline = TreeCount(processes=1, threads=20)
    assert process_findings(baseline, TreeCount(1, 20), "now") == []
    found = {f.code: f for f in process_findings(baseline, TreeCount(2, 23), "during the checked calls")}
    assert found["processes_appeared"].severity is Severity.REVIEW
    assert "3 thread(s)" in found["threads_appeared"].message
    assert process_findings(None, TreeCount(5, 5), "now") == []


class LaterPhases:
    """Stands in for the run session's next phase: answers the judge's further timed phases with canned replies,
    in order (the last one again once they run out)."""

    def __init__(self, *replies: TimedReply) -> None:
        self.replies = replies
        self.calls = 0

    def __call__(self) -> TimedReply:
        self.calls += 1
        return self.replies[min(self.calls, len(self.replies)) - 1]


class LoopAgain:
    """Stands in for the reference's child: the reference's loop timed again, under the load `gap_ms` and
    `overhead_ms` (per rep; the earlier loop's where None) stand for."""

    def __init__(self, gap_ms: float, overhead_ms: float | None = None) -> None:
        self.gap_ms, self.overhead_ms, self.calls = gap_ms, overhead_ms, 0

    def __call__(self, loop: ReferenceLoop) -> ReferenceLoop:
        self.calls += 1
        overhead = loop.overhead_per_rep_ms if self.overhead_ms is None else self.overhead_ms
        return ReferenceLoop(self.gap_ms, overhead, loop.flush_ms)


def confirm(first: TimedReply, *later: TimedReply, make_request: RequestFactory,
            again: LoopAgain | None = None) -> tuple[TimedReply, set[str], int]:
    problem = find_builtin("add_relu")
    assert problem is not None
    request = make_request(problem.spec(), "unused")
    launcher = SubprocessLauncher()
    job = Job.start(request, launcher, lambda _p: None, Warm.nothing(launcher, request.work_root, request.cache_dir))
    record = Record()
    session = LaterPhases(*later)
    try:
        loop_again = again or LoopAgain(LOOP.wall_gap_ms)
        kept = confirmed(job, record, first, LOOP, lambda loop: (session(), loop_again(loop)))
    finally:
        job.cleanup()
    return kept, {f.code for f in record.findings}, session.calls


STALLED = timed(0.27, 0.28, 40, 40 * (2.75 + 0.3))
HONEST = timed(2.7, 2.75, 40, 40 * (2.75 + 0.3) + 5)


def test_a_host_that_stalled_once_is_timed_again_and_not_flagged(make_request: RequestFactory) -> None:
    kept, found, calls = confirm(STALLED, HONEST, make_request=make_request)
    assert calls == 1 and kept is HONEST and found == set()


def test_a_host_that_stalled_twice_is_timed_a_third_time(make_request: RequestFactory) -> None:
    kept, found, calls = confirm(STALLED, STALLED, HONEST, make_request=make_request)
    assert calls == 2 and kept is HONEST and found == set()


def test_time_missing_in_every_phase_is_flagged(make_request: RequestFactory) -> None:
    _, found, calls = confirm(STALLED, STALLED, make_request=make_request)
    assert calls == CONFIRM_PHASES and "timing_inconsistent" in found


def test_other_findings_of_the_first_phase_stand(make_request: RequestFactory) -> None:
    tampered = timed(0.27, 0.28, 40, 40 * (2.75 + 0.3), clock_tampered_reps=2)
    _, found, _ = confirm(tampered, HONEST, make_request=make_request)
    assert found == {"timer_patched"}


def test_time_the_reference_loop_also_needs_when_timed_again_is_not_flagged(make_request: RequestFactory) -> None:
    again = LoopAgain(LOOP.wall_gap_ms, overhead_ms=8.0)  # the host as loaded for the reference as the candidate
    kept, found, calls = confirm(STALLED, STALLED, make_request=make_request, again=again)
    assert (calls, again.calls, found) == (1, 1, set()) and kept is STALLED


def test_a_consistent_phase_is_not_repeated(make_request: RequestFactory) -> None:
    kept, _, calls = confirm(HONEST, STALLED, make_request=make_request)
    assert calls == 0 and kept is HONEST


# 2 ms of device time a rep, 1.4 ms more of wall time: past the reference's gap by more than 20 % of the wall.
GAPPED = timed(2.0, 3.4, 40, 40 * (3.4 + 0.3) + 5)
LOADED_REFERENCE = 1.5  # the reference's own gap, timed again under the same load


def test_a_gap_the_reference_shows_too_when_timed_again_is_not_flagged(make_request: RequestFactory) -> None:
    again = LoopAgain(LOADED_REFERENCE)
    kept, found, calls = confirm(GAPPED, GAPPED, make_request=make_request, again=again)
    assert (calls, again.calls, found) == (1, 1, set()) and kept is GAPPED


def test_a_gap_the_reference_does_not_show_is_flagged_after_every_phase(make_request: RequestFactory) -> None:
    again = LoopAgain(LOOP.wall_gap_ms)
    _, found, calls = confirm(GAPPED, GAPPED, make_request=make_request, again=again)
    assert calls == again.calls == CONFIRM_PHASES and found == {"work_outside_timed_stream"}
