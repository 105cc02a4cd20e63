"""Both sides timed in turn, a few reps a round, with both run children on one CPU: where a call's time is host
dispatch (a forward() that waits for the device, so the stream cannot be held), which side ran while the CPU
was in which speed mode decides the speedup. The GPU case is measured by bench/kernelbench_sweep.py on level 3's
LSTM and GRU networks; here the rounds, their pooling, the placement and the re-check's sample run for real on
the CPU."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from kernelgrade.evaluator import (
    EvalRequest,
    Interleave,
    SubprocessLauncher,
    TimingParams,
    TrialPlan,
    Verdict,
    Warm,
    evaluate,
    timing,
)
from kernelgrade.evaluator.host.reference import Reference
from kernelgrade.evaluator.host.reference_cache import References
from kernelgrade.evaluator.host.run_children import RunChildren
from kernelgrade.evaluator.host.session import RunSession
from kernelgrade.evaluator.integrity.crosscheck import ReferenceLoop
from kernelgrade.evaluator.judge import interleaved
from kernelgrade.evaluator.judge.reference_child import ReferenceRun
from kernelgrade.evaluator.judge.timed_outputs import _load_timed, _timed_entry
from kernelgrade.evaluator.sandbox.cpus import here, on_one_cpu
from kernelgrade.evaluator.wire.replies import Integrity, TimedReply, TimeReply
from tests.conftest import TEST_LIMITS
from tests.evaluator.test_reference_child import PROBLEM, SMALL, SOURCE, TIMING, _loaded, _reference
from tests.evaluator.test_warm import ADD

CLEAN = Integrity((), (), 0)
SLEEPERS = """
import threading, time
for _ in range(3):
    threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
time.sleep(30)
"""


def reply(reps: int, host_bound: int, integrity: Integrity = CLEAN, tampered: int = 0) -> TimedReply:
    reported = TimeReply((1.0,) * reps, (1.2,) * reps, "target_precision", "cuda_event", integrity,
                         host_bound_reps=host_bound, clock_tampered_reps=tampered)
    return TimedReply(reported, reps * 1.5 / 1000.0, 0.0)


@pytest.mark.parametrize(("mode", "candidate", "reference", "expected"), [
    (Interleave.AUTO, 40, 40, True),
    (Interleave.AUTO, 40, 10, False),  # the reference's stream was held: its time is the device's
    (Interleave.AUTO, 15, 40, False),
    (Interleave.ON, 0, 0, True),
    (Interleave.OFF, 40, 40, False),
])
def test_turns_are_wanted_where_both_sides_are_mostly_host_bound(mode: Interleave, candidate: int, reference: int,
                                                                  expected: bool) -> None:
    params = TimingParams(interleave=mode)
    assert interleaved.wanted(params, reply(40, candidate), ReferenceRun.of(reply(40, reference))) is expected


def test_pooled_rounds_keep_every_rep_every_request_and_anything_any_round_reported() -> None:
    patched = dataclasses.replace(CLEAN, replaced_functions=("torch.cuda.Event.elapsed_time",), extra_threads=1)
    rounds = [reply(5, 5), reply(5, 4, patched, tampered=1), reply(5, 5)]
    pooled = interleaved.pooled(rounds, "interleaved (3 rounds of 5)")
    assert len(pooled.reported.device_ms) == 15 and pooled.requests == 3
    assert pooled.reported.host_bound_reps == 14 and pooled.reported.clock_tampered_reps == 1
    assert pooled.reported.integrity.replaced_functions == ("torch.cuda.Event.elapsed_time",)
    assert pooled.reported.integrity.extra_threads == 1
    assert pooled.outer_seconds == pytest.approx(3 * 5 * 1.5 / 1000.0) and pooled.waited_seen_ms == 0.0
    unseen = interleaved.pooled([*rounds, dataclasses.replace(reply(5, 5), waited_seen_ms=None)], "")
    assert unseen.waited_seen_ms is None  # a round the judge could not read vouches for no wait


def test_the_candidates_rounds_are_checked_against_the_references_rounds() -> None:
    plain = ReferenceLoop(wall_gap_ms=0.05, overhead_per_rep_ms=0.3, flush_ms=0.085, tail_ms=0.01)
    rounds = ReferenceRun.of(reply(40, 40))  # gap 0.2 ms a rep, overhead (60 - 48) / 40 ms a rep
    loop = rounds.beside(plain)
    assert (loop.wall_gap_ms, loop.tail_ms, loop.flush_ms) == (rounds.wall_gap_ms, rounds.tail_ms, 0.085)
    assert loop.overhead_per_rep_ms == pytest.approx(0.3)
    busier = rounds.beside(dataclasses.replace(plain, overhead_per_rep_ms=0.1))
    assert busier.overhead_per_rep_ms == pytest.approx(rounds.overhead_per_rep_ms)


def test_the_candidates_phase_is_checked_against_the_tighter_of_the_references_runs_around_it() -> None:
    def run(gap: float, overhead: float, tail: float, flush: tuple[float, ...]) -> ReferenceRun:
        raw = timing.RawSamples((1.0,) * 3, (1.1,) * 3, "max_reps", "events", flush_ms=flush)
        return ReferenceRun(raw, gap, overhead, tail)

    loop = run(0.05, 0.2, 0.012, (0.08, 0.09)).around(run(0.07, 0.3, 0.010, (0.1,)))
    assert loop == ReferenceLoop(wall_gap_ms=0.05, overhead_per_rep_ms=0.3, flush_ms=0.09, tail_ms=0.010)
    assert run(0.05, 0.2, 0.0, ()).around(run(0.05, 0.2, 0.0, ())).flush_ms == 0.0  # on the CPU: no flush


def test_a_childs_threads_share_one_cpu_inside_and_get_the_judges_back_after() -> None:
    child = subprocess.Popen([sys.executable, "-c", SLEEPERS])
    try:
        threads = lambda: [int(t) for t in os.listdir(f"/proc/{child.pid}/task")]  # noqa: E731
        while len(threads()) < 4:
            pass
        with on_one_cpu([child.pid]) as cpu:
            assert cpu == here()[-1]
            assert all(os.sched_getaffinity(t) == {cpu} for t in threads())
        assert all(os.sched_getaffinity(t) == set(here()) for t in threads())
    finally:
        child.kill()
        child.wait()


def test_rounds_in_turn_give_each_side_every_round_and_the_recheck_a_sample_of_all(tmp_path: Path) -> None:
    children = RunChildren(SubprocessLauncher(), tmp_path / "work")
    reference = _reference(ADD)
    try:
        with _loaded(children, reference) as ours, _loaded(children, reference) as theirs:
            ours.run(SMALL)  # each side warmed up and timed once, as the stage does first
            theirs.run(SMALL)
            turns = interleaved.taken(ours.session, theirs, SMALL, 0.01, TEST_LIMITS.timing_s, one_cpu=True)
            reps = _kept_reps(ours.session, reference)
            kept = len(reps)
    finally:
        children.close()
    total = interleaved.ROUNDS * interleaved.ROUND_REPS
    assert len(turns.candidate.reported.device_ms) == len(turns.reference.raw.device_ms) == total
    assert turns.candidate.requests == interleaved.ROUNDS
    assert "rounds of 5 reps a side" in turns.described
    # The last rep of each input set is kept: from the last round, numbered on from the rounds before.
    assert len(set(reps)) == kept and max(reps) >= total - interleaved.ROUND_REPS


def _kept_reps(session: RunSession, reference: Reference) -> list[int]:
    """The reps of the timed outputs the child kept, asked for as files (one a request, offered no region)."""
    reps: list[int] = []
    kept = 1
    while len(reps) < kept:
        reply = session.timed_outputs(session.work_dir, TEST_LIMITS.call_s, first=len(reps))
        assert reply.ends == (0,)
        entry = _load_timed(session.work_dir / f"timed_{len(reps)}.kgt", torch.device("cpu"), reference.output_bytes)
        reps.append(_timed_entry(entry, SMALL.input_sets)[2])
        kept = reply.kept
    return reps


@pytest.mark.alone
def test_a_verdict_timed_in_turn_is_correct_near_1x_and_says_how_it_was_timed(tmp_path: Path) -> None:
    request = EvalRequest(problem=PROBLEM, submission=SOURCE.replace("class Model", "class ModelNew"),
                          cache_dir=tmp_path / "cache", work_root=tmp_path / "work",
                          trials=TrialPlan(public_trials=1, secret_trials=1),
                          timing=dataclasses.replace(TIMING, interleave=Interleave.ON))
    warm = Warm(RunChildren(SubprocessLauncher(), tmp_path / "work", 0), References())
    try:
        result = evaluate(request, warm=warm)
    finally:
        warm.close()
    assert result.verdict is Verdict.CORRECT, result.failure
    assert result.speedup is not None and 0.5 <= result.speedup <= 2.0, result.speedup
    assert result.method is not None and "interleaved with the candidate" in result.method.reference_placement
    assert result.candidate_timing is not None and "interleaved" in result.candidate_timing.stop_reason
    assert "timing:interleaved" in dict(result.stage_seconds)
