"""The torch.compile baseline in the judge: a fresh stored one goes into the request, a measured one is stored
with the result (only while the lease holds), and end to end: the first job of a problem measures, the next
reuses."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
import torch

from kernelgrade.config import Settings, SettingsError
from kernelgrade.evaluator import (
    BaselinePlan,
    BaselineStatus,
    CompiledBaseline,
    EvalRequest,
    EvalResult,
    SubprocessLauncher,
    TimingStats,
    Verdict,
)
from kernelgrade.storage.baselines import fresh_baseline, record_baseline
from kernelgrade.storage.clock import utcnow
from kernelgrade.storage.database import Database
from kernelgrade.storage.jobs import requeue_job
from kernelgrade.storage.migrate import upgrade
from kernelgrade.storage.problems import latest_problem
from kernelgrade.storage.records import ClaimedJob, EvaluationRecord, JobStatus, ProblemRecord
from kernelgrade.storage.submissions import get_submission
from kernelgrade.worker.job_outcome import baseline_to_store
from kernelgrade.worker.judge import GradeOutcome, Judge
from kernelgrade.worker.judges import JudgeSlot
from kernelgrade.worker.pool import WorkerPool
from tests.service.conftest import add_builtin, base_settings
from tests.service.servers import wait_until
from tests.service.sources import CORRECT, variant
from tests.storage.builders import add_submission
from tests.storage.databases import fresh_database_url

DEVICE_CLASS = "cpu-test"
SLOT = JudgeSlot("cpu0", "cpu", 0, DEVICE_CLASS, "cpu", (("cpu", DEVICE_CLASS),))
WEEK = timedelta(days=7)
# An inductor compile of the reference on a loaded 2-core machine, twice over, plus two fast gradings.
END_TO_END_S = 600.0


def measured(median_ms: float = 2.0, age: timedelta = timedelta(0)) -> CompiledBaseline:
    timing = TimingStats(n=10, median_ms=median_ms, mean_ms=median_ms, std_ms=0.01, min_ms=median_ms,
                         max_ms=median_ms, ci95_low_ms=median_ms, ci95_high_ms=median_ms, stop_reason="target")
    return CompiledBaseline(status=BaselineStatus.MEASURED, problem_hash="h", backend="inductor (mode default)",
                            device_name="cpu", torch=torch.__version__, measured_at=(utcnow() - age).isoformat(),
                            timing=timing, compile_seconds=3.0)


def _problem(database: Database) -> ProblemRecord:
    add_builtin(database)
    with database.session() as session:
        problem = latest_problem(session, "add_relu")
    assert problem is not None
    return problem


def _store(database: Database, problem_id: int, baseline: CompiledBaseline, device_class: str = DEVICE_CLASS) -> None:
    record = baseline_to_store(EvalResult(verdict=Verdict.CORRECT, problem="add_relu", problem_hash="h",
                                          precision="fp32", compiled_baseline=baseline))
    assert record is not None
    with database.session() as session:
        record_baseline(session, problem_id, device_class, record)


def _judge(settings: Settings, database: Database) -> Judge:
    return Judge(SLOT, "test-judge", settings, database, SubprocessLauncher(), threading.Event(), threading.Event())


def _claimed(judge: Judge) -> ClaimedJob:
    job = judge._claim()
    assert job is not None
    return job


def _evaluation(database: Database, submission_id: int) -> EvaluationRecord:
    with database.session() as session:
        view = get_submission(session, submission_id)
    assert view is not None and view.evaluation is not None
    return view.evaluation


@pytest.mark.parametrize(("environ", "measures"), [
    ({}, True),
    ({"KERNELGRADE_TIMING_PROFILE": "fast"}, False),
    ({"KERNELGRADE_TIMING_PROFILE": "fast", "KERNELGRADE_COMPILED_BASELINE": "on"}, True),
    ({"KERNELGRADE_COMPILED_BASELINE": "off"}, False),
])
def test_the_setting_measures_under_the_standard_profile_unless_told(environ: dict[str, str],
                                                                     measures: bool) -> None:
    assert Settings.from_env(environ).measures_compiled_baseline is measures


def test_the_age_comes_from_the_environment_and_a_bad_choice_is_refused() -> None:
    settings = Settings.from_env({"KERNELGRADE_COMPILED_BASELINE_MAX_AGE_HOURS": "1.5"})
    assert settings.compiled_baseline_max_age_hours == 1.5
    with pytest.raises(SettingsError, match="KERNELGRADE_COMPILED_BASELINE='sometimes': use auto, on or off"):
        Settings.from_env({"KERNELGRADE_COMPILED_BASELINE": "sometimes"})


def test_the_judge_hands_a_fresh_stored_baseline_to_the_evaluator(database: Database, database_url: str,
                                                                   tmp_path: Path) -> None:
    problem = _problem(database)
    known = measured(1.5, age=timedelta(hours=2))
    _store(database, problem.id, measured(9.0, age=timedelta(days=8)))  # stale
    _store(database, problem.id, known)
    _store(database, problem.id, measured(7.0), device_class="cpu-elsewhere")
    add_submission(database, problem, CORRECT)
    judge = _judge(base_settings(tmp_path, database_url, compiled_baseline="on"), database)
    request = judge.request_for(_claimed(judge))
    assert request.compiled_baseline == BaselinePlan(measure=True, known=known)


def test_without_a_fresh_baseline_the_judge_asks_to_measure_and_off_means_neither(
        database: Database, database_url: str, tmp_path: Path) -> None:
    problem = _problem(database)
    _store(database, problem.id, measured(age=timedelta(days=8)))
    add_submission(database, problem, CORRECT)
    on = _judge(base_settings(tmp_path, database_url, compiled_baseline="on"), database)
    job = _claimed(on)
    assert on.request_for(job).compiled_baseline == BaselinePlan(measure=True, known=None)
    _store(database, problem.id, measured())
    off = _judge(base_settings(tmp_path, database_url), database)  # the fast profile: auto means off
    assert off.request_for(job).compiled_baseline == BaselinePlan(measure=False, known=None)


@pytest.mark.parametrize("lease_lost", [False, True])
def test_a_measured_baseline_is_stored_only_with_a_recorded_result(
        lease_lost: bool, database: Database, database_url: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    problem = _problem(database)
    view = add_submission(database, problem, CORRECT)
    judge = _judge(base_settings(tmp_path, database_url, compiled_baseline="on"), database)
    baseline = measured(2.0)

    def grade(request: EvalRequest, *_args: object) -> EvalResult:
        # Stands in for evaluate(): what it was asked, and a result that measured the baseline.
        assert request.compiled_baseline == BaselinePlan(measure=True, known=None)
        if lease_lost:
            with database.session() as session:
                requeue_job(session, view.evaluation.id if view.evaluation else 0, judge.owner, "taken over")
        return EvalResult(verdict=Verdict.CORRECT, problem="add_relu", problem_hash=problem.content_hash,
                          precision="fp32", speedup=1.1, compiled_baseline=baseline, speedup_vs_compiled=0.4)

    monkeypatch.setattr("kernelgrade.worker.judge.evaluate", grade)
    assert view.evaluation is not None
    assert judge.grade_delivered(view.evaluation.id) is GradeOutcome.GRADED
    with database.session() as session:
        stored = fresh_baseline(session, problem.id, DEVICE_CLASS, torch.__version__, WEEK, utcnow())
    evaluation = _evaluation(database, view.submission.id)
    if lease_lost:
        assert stored is None and evaluation.status is JobStatus.QUEUED
    else:
        assert stored is not None and stored.median_ms == 2.0 and stored.data == baseline.to_json_dict()
        assert evaluation.speedup_vs_compiled == 0.4


@pytest.fixture
def sqlite_database(tmp_path: Path) -> Iterator[tuple[Database, str]]:
    with fresh_database_url("sqlite", tmp_path) as url:
        database = Database.connect(url)
        upgrade(database)
        yield database, url
        database.dispose()


@pytest.mark.slow
def test_the_first_job_measures_torch_compile_and_the_next_reuses_it(sqlite_database: tuple[Database, str],
                                                                      tmp_path: Path) -> None:
    """Real evaluator, real torch.compile on the CPU. SQLite only: storage tests cover Postgres."""
    database, url = sqlite_database
    problem = _problem(database)
    first, second = (add_submission(database, problem, source) for source in (CORRECT, variant(1)))
    settings = base_settings(tmp_path, url, local_judges=-1, poll_seconds=0.2, compiled_baseline="on")
    pool = WorkerPool.start(settings, database)
    try:
        wait_until(lambda: _evaluation(database, second.submission.id).status is JobStatus.DONE, END_TO_END_S,
                   "both jobs to be graded")
    finally:
        pool.stop()
    results = [_evaluation(database, view.submission.id) for view in (first, second)]
    assert [r.verdict for r in results] == ["correct", "correct"], [r.error_summary for r in results]
    baselines = [EvalResult.from_json_dict(r.result or {}) for r in results]
    measured_one, reused_one = (b.compiled_baseline for b in baselines)
    assert measured_one is not None and measured_one.status is BaselineStatus.MEASURED, measured_one
    assert not baselines[0].compiled_baseline_reused and baselines[1].compiled_baseline_reused
    assert reused_one == measured_one
    assert all(r.speedup_vs_compiled is not None and r.speedup_vs_compiled > 0 for r in results)
    with database.session() as session:
        stored = fresh_baseline(session, problem.id, results[0].device_class or "", measured_one.torch, WEEK,
                                utcnow())
    assert stored is not None and stored.median_ms == measured_one.median_ms
