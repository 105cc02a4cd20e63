"""The reference's timing per verdict: a full measurement stored where its runs agree, later verdicts confirming
it with a short drift check beside the candidate, and a full measurement again where the check fails, the
stored one is old, or the key (protocol, device, flags) differs."""

from __future__ import annotations

import dataclasses
import json
import statistics
import time
from pathlib import Path

import pytest
import torch

from kernelgrade.evaluator import (
    EvalRequest,
    SubprocessLauncher,
    TimingParams,
    TrialPlan,
    Verdict,
    Warm,
    evaluate,
    prepare,
)
from kernelgrade.evaluator.host.host_lock import HostLock
from kernelgrade.evaluator.host.reference import Reference
from kernelgrade.evaluator.host.reference_cache import References
from kernelgrade.evaluator.host.run_children import RunChildren
from kernelgrade.evaluator.host.trial_store import TrialStore
from kernelgrade.evaluator.judge import reference_timing
from kernelgrade.evaluator.request import TimingFlags
from kernelgrade.evaluator.timing import RawSamples
from tests.evaluator.test_host_lock import held_elsewhere
from tests.evaluator.test_warm import ADD, BATCH_NORM

CPU = torch.device("cpu")
PARAMS = TimingParams()
FLUSH = 64 * 1024**2


def _run(median_ms: float, reps: int = 20) -> RawSamples:
    """`reps` samples spread 1 % around `median_ms`."""
    values = tuple(median_ms * (1 + (i - (reps - 1) / 2) / (reps * 50)) for i in range(reps))
    return RawSamples(values, values, "target_precision", "perf_counter_ns")


def _reference(tmp_path: Path) -> Reference:
    return Reference(ADD, CPU, 42, store=TrialStore(tmp_path / "prepared"))


def _never() -> RawSamples:
    raise AssertionError("the reference was timed in full again")


def _stored_after_full_runs(reference: Reference, median_ms: float = 1.0) -> reference_timing.ReferencePlan:
    first = reference_timing.plan(reference, PARAMS, FLUSH, CPU)
    reference_timing.concluded(first, reference, PARAMS, _run(median_ms), _run(median_ms), _never)
    return reference_timing.plan(reference, PARAMS, FLUSH, CPU)


def test_a_full_measurement_whose_runs_agree_is_stored_and_later_checked_with_few_reps(tmp_path: Path) -> None:
    reference = _reference(tmp_path)
    first = reference_timing.plan(reference, PARAMS, FLUSH, CPU)
    assert first.stored is None and first.params(PARAMS) == PARAMS
    done = reference_timing.concluded(first, reference, PARAMS, _run(1.0), _run(1.01), _never)
    assert done.stats.n == 40 and "timed in full (no distribution stored" in done.placement
    assert done.placement.endswith("stored for later verdicts)")
    later = reference_timing.plan(reference, PARAMS, FLUSH, CPU)
    assert later.stored is not None and len(later.stored.device_ms) == 40
    check = later.params(PARAMS)
    assert (check.min_reps, check.max_reps) == (PARAMS.reference_check_reps,) * 2


def test_a_check_within_the_drift_reports_the_stored_distribution(tmp_path: Path) -> None:
    reference = _reference(tmp_path)
    plan = _stored_after_full_runs(reference)
    done = reference_timing.concluded(plan, reference, PARAMS, _run(1.02, 10), _run(1.02, 10), _never)
    assert done.stats.n == 40 and done.stats.median_ms == pytest.approx(1.0, rel=0.01)
    assert done.placement.startswith("stored distribution (40 reps") and "+2.0% off it" in done.placement


def test_a_check_past_the_drift_times_the_reference_in_full_and_stores_that(tmp_path: Path) -> None:
    reference = _reference(tmp_path)
    plan = _stored_after_full_runs(reference)
    calls: list[int] = []

    def full_again() -> RawSamples:
        calls.append(1)
        return _run(1.2)

    done = reference_timing.concluded(plan, reference, PARAMS, _run(1.2, 10), _run(1.2, 10), full_again)
    assert calls == [1] and done.stats.n == 40 and done.stats.median_ms == pytest.approx(1.2, rel=0.01)
    assert "+20.0% off the stored distribution" in done.placement
    assert done.placement.endswith("stored for later verdicts")
    renewed = reference_timing.plan(reference, PARAMS, FLUSH, CPU).stored
    assert renewed is not None and len(renewed.device_ms) == 20


def test_runs_that_disagree_store_nothing(tmp_path: Path) -> None:
    reference = _reference(tmp_path)
    first = reference_timing.plan(reference, PARAMS, FLUSH, CPU)
    done = reference_timing.concluded(first, reference, PARAMS, _run(1.0), _run(1.1), _never)
    assert done.placement.endswith("not stored: the runs before and after the candidate differ)")
    assert reference_timing.plan(reference, PARAMS, FLUSH, CPU).stored is None
    plan = _stored_after_full_runs(reference)  # a check that fails, then a full run unlike the check before
    reference_timing.concluded(plan, reference, PARAMS, _run(1.0, 10), _run(1.2, 10), lambda: _run(1.2))
    kept = reference_timing.plan(reference, PARAMS, FLUSH, CPU).stored
    assert kept is not None and len(kept.device_ms) == 40  # the earlier one stands


def test_an_old_distribution_is_measured_again(tmp_path: Path) -> None:
    reference = _reference(tmp_path)
    plan = _stored_after_full_runs(reference)
    assert plan.stored is not None
    reference.keep_timing(plan.protocol, dataclasses.replace(plan.stored, measured_at=time.time() - 7200))
    again = reference_timing.plan(reference, PARAMS, FLUSH, CPU)
    assert again.stored is None and again.why_full == "the stored distribution was 2.0 h old"


@pytest.mark.parametrize("other", [
    dataclasses.replace(PARAMS, flags=TimingFlags.PYTORCH_DEFAULT),
    dataclasses.replace(PARAMS, max_reps=500),
    dataclasses.replace(PARAMS, hold_stream=False),
])
def test_another_protocol_finds_nothing_stored_but_the_check_s_own_parameters_do_not_matter(
        tmp_path: Path, other: TimingParams) -> None:
    reference = _reference(tmp_path)
    _stored_after_full_runs(reference)
    assert reference_timing.plan(reference, other, FLUSH, CPU).stored is None
    assert reference_timing.plan(reference, PARAMS, 2 * FLUSH, CPU).stored is None
    looser = dataclasses.replace(PARAMS, reference_check_reps=3, reference_drift=0.5)
    assert reference_timing.plan(reference, looser, FLUSH, CPU).stored is not None


def test_no_stored_timing_is_used_when_the_request_asks_for_full_runs_or_the_reference_changes(
        tmp_path: Path) -> None:
    reference = _reference(tmp_path)
    _stored_after_full_runs(reference)
    full = dataclasses.replace(PARAMS, reference_check_reps=0)
    how = reference_timing.plan(reference, full, FLUSH, CPU)
    assert how.why_full == "the request times it in full"
    done = reference_timing.concluded(how, reference, full, _run(2.0), _run(2.0), _never)
    assert done.placement.endswith("timed in full (the request times it in full)")  # and nothing stored
    stored = reference_timing.plan(reference, PARAMS, FLUSH, CPU).stored
    assert stored is not None and statistics.median(stored.device_ms) == pytest.approx(1.0)  # the earlier one
    stateful = References(store=TrialStore(tmp_path / "prepared")).reference(BATCH_NORM, CPU, 42)
    stateful.trial(1)  # seen to change its running statistics
    why = reference_timing.plan(stateful, PARAMS, FLUSH, CPU).why_full
    assert why == "this judge keeps no reference timings for this problem"


def test_an_unreadable_stored_timing_is_measured_again(tmp_path: Path) -> None:
    reference = _reference(tmp_path)
    _stored_after_full_runs(reference)
    for path in (tmp_path / "prepared" / "timings").glob("*.json"):
        path.write_text("{not json")
    assert reference_timing.plan(reference, PARAMS, FLUSH, CPU).stored is None


# A tolerance no host's noise reaches: a microsecond reference's runs on a busy 2-core host differ by 4x and more
# (seen here beside a build), and this test is about which path a verdict takes, not about the host.
LOOSE = dataclasses.replace(TimingParams(warmup_ms=5.0, min_reps=10, max_reps=100, max_device_ms=300.0,
                                         max_wall_ms=1500.0, input_sets=2), reference_check_reps=5,
                            reference_drift=1000.0)


def _judge(tmp_path: Path) -> Warm:
    store = TrialStore(tmp_path / "prepared")
    return Warm(RunChildren(SubprocessLauncher(), tmp_path / "work", 0), References(store=store))


def _request(tmp_path: Path, timing: TimingParams = LOOSE, measure_timing: bool = True) -> EvalRequest:
    return EvalRequest(problem=ADD, submission=ADD.source.replace("class Model", "class ModelNew"),
                       cache_dir=tmp_path / "cache", work_root=tmp_path / "work",
                       trials=TrialPlan(public_trials=1, secret_trials=1), timing=timing,
                       measure_timing=measure_timing)


def test_verdicts_time_in_full_then_confirm_the_stored_timing_then_time_in_full_when_it_drifted(
        tmp_path: Path) -> None:
    warm, request = _judge(tmp_path), _request(tmp_path)
    try:
        placements = []
        for _ in range(2):
            result = evaluate(request, warm=warm)
            assert result.verdict is Verdict.CORRECT and result.method is not None
            placements.append(result.method.reference_placement)
        [stored_file] = (tmp_path / "prepared" / "timings").glob("*.json")
        data = json.loads(stored_file.read_text())
        stored_file.write_text(json.dumps(data | {"device_ms": [v / 1e6 for v in data["device_ms"]]}))
        result = evaluate(request, warm=warm)
    finally:
        warm.close()
    assert result.verdict is Verdict.CORRECT and result.method is not None and result.reference_timing is not None
    assert "timed in full (no distribution stored" in placements[0] and "stored for later verdicts" in placements[0]
    assert placements[1].startswith("stored distribution (")
    assert "off the stored distribution (over ±100000%)" in result.method.reference_placement
    assert result.reference_timing.n >= 2 * LOOSE.reference_check_reps + LOOSE.min_reps


def test_a_prepared_problem_s_first_verdict_checks_the_timing_its_preparation_stored(tmp_path: Path) -> None:
    warm = _judge(tmp_path)
    try:
        done = prepare(_request(tmp_path), warm)
        result = evaluate(_request(tmp_path), warm=warm)
    finally:
        warm.close()
    assert done.finished and done.reference_timed
    assert result.method is not None and result.method.reference_placement.startswith("stored distribution (")


@pytest.mark.parametrize("untimed", [
    _request(Path("unused"), dataclasses.replace(LOOSE, reference_check_reps=0)),
    _request(Path("unused"), measure_timing=False),
])
def test_preparation_does_not_time_a_reference_its_verdicts_would_not_check(tmp_path: Path,
                                                                             untimed: EvalRequest) -> None:
    warm = _judge(tmp_path)
    try:
        done = prepare(dataclasses.replace(untimed, cache_dir=tmp_path / "cache", work_root=tmp_path / "work"), warm)
    finally:
        warm.close()
    assert done.finished and not done.reference_timed
    assert not list((tmp_path / "prepared").glob("timings/*"))


def test_a_cpu_problem_is_not_timed_ahead_while_the_host_builds(tmp_path: Path) -> None:
    """Its preparation does not wait for the build (a job may need the judge) and leaves the timing to the
    problem's first verdict."""
    lock = HostLock(tmp_path / "host.lock")
    warm = Warm(RunChildren(SubprocessLauncher(), tmp_path / "work", 0, host_lock=lock),
                References(store=TrialStore(tmp_path / "prepared")))
    try:
        with held_elsewhere(lock.path, "LOCK_SH"):
            done = prepare(_request(tmp_path), warm)
    finally:
        warm.close()
    assert done.finished and not done.reference_timed
