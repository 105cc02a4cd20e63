"""The torch.compile baseline in the judge, off the verdict's path: a fresh stored one goes into the request;
without one the verdict is recorded with its baseline pending, and a judge with no job to grade measures it,
stores it and fills in the evaluations that waited; end to end, both verdicts come before the baseline."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
import torch
from sqlalchemy import select

from kernelgrade.config import Settings, SettingsError
from kernelgrade.evaluator import (
    BaselinePlan,
    BaselineStatus,
    CompiledBaseline,
    Environment,
    EvalRequest,
    EvalResult,
    SubprocessLauncher,
    TimingStats,
    Verdict,
)
from kernelgrade.service.stored_result import PENDING_BASELINE, StoredResult
from kernelgrade.storage.baselines import fresh_baseline, record_baseline
from kernelgrade.storage.clock import utcnow
from kernelgrade.storage.database import Database
from kernelgrade.storage.migrate import upgrade
from kernelgrade.storage.models import BoardEntryRow
from kernelgrade.storage.records import ClaimedJob, JobStatus, ProblemRecord
from kernelgrade.worker.job_outcome import baseline_to_store
from kernelgrade.worker.judge import GradeOutcome, Judge
from kernelgrade.worker.judges import JudgeSlot
from kernelgrade.worker.pool import WorkerPool
from tests.service.conftest import base_settings, builtin_problem
from tests.service.servers import wait_until
from tests.service.sources import CORRECT, variant
from tests.storage.builders import add_submission, evaluation_of
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


def _store(database: Database, problem_id: int, baseline: CompiledBaseline, device_class: str = DEVICE_CLASS) -> None:
    record = baseline_to_store(baseline)
    with database.session() as session:
        record_baseline(session, problem_id, device_class, record)


def _judge(settings: Settings, database: Database) -> Judge:
    return Judge(SLOT, "test-judge", settings, database, SubprocessLauncher(), threading.Event(), threading.Event())


def _claimed(judge: Judge) -> ClaimedJob:
    job = judge._claim()
    assert job is not None
    return job


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
    problem = builtin_problem(database)
    known = measured(1.5, age=timedelta(hours=2))
    _store(database, problem.id, measured(9.0, age=timedelta(days=8)))  # stale
    _store(database, problem.id, known)
    _store(database, problem.id, measured(7.0), device_class="cpu-elsewhere")
    add_submission(database, problem, CORRECT)
    judge = _judge(base_settings(tmp_path, database_url, compiled_baseline="on"), database)
    request = judge.request_for(_claimed(judge))
    assert request.compiled_baseline == BaselinePlan(measure=False, known=known)


CANDIDATE_MS = 4.0


def _timed_result(problem: ProblemRecord) -> EvalResult:
    """What evaluate() returns for a correct, timed submission, graded without a compiled baseline."""
    timing = TimingStats(n=10, median_ms=CANDIDATE_MS, mean_ms=CANDIDATE_MS, std_ms=0.01, min_ms=CANDIDATE_MS,
                         max_ms=CANDIDATE_MS, ci95_low_ms=CANDIDATE_MS, ci95_high_ms=CANDIDATE_MS,
                         stop_reason="target")
    env = Environment(device_kind="cpu", device_name="cpu", driver="", torch=torch.__version__, cuda="",
                      python="3", host="h", arch="", sandbox="none")
    return EvalResult(verdict=Verdict.CORRECT, problem="add_relu", problem_hash=problem.content_hash,
                      precision="fp32", speedup=1.1, reference_timing=timing, candidate_timing=timing,
                      environment=env)


def _grade(judge: Judge, problem: ProblemRecord, database: Database, monkeypatch: pytest.MonkeyPatch,
           source: str = CORRECT) -> int:
    def grade(request: EvalRequest, *_args: object) -> EvalResult:
        plan = request.compiled_baseline
        assert not plan.measure and plan.known is None  # nothing measured on the verdict's path
        assert plan.later == judge.settings.measures_compiled_baseline
        return dataclasses.replace(_timed_result(problem), compiled_baseline_pending=plan.later)

    monkeypatch.setattr("kernelgrade.worker.grader.evaluate", grade)
    view = add_submission(database, problem, source)
    assert view.evaluation is not None
    assert judge.grade_delivered(view.evaluation.id) is GradeOutcome.GRADED
    return view.submission.id


@pytest.mark.parametrize("setting", ["on", "off"])
def test_without_a_fresh_baseline_the_verdict_is_recorded_with_it_pending(
        setting: str, database: Database, database_url: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    problem = builtin_problem(database)
    _store(database, problem.id, measured(age=timedelta(days=8)))  # stale: not handed over
    judge = _judge(base_settings(tmp_path, database_url, compiled_baseline=setting), database)
    evaluation = evaluation_of(database, _grade(judge, problem, database, monkeypatch))
    assert evaluation.verdict == "correct" and evaluation.speedup_vs_compiled is None
    shown = StoredResult.read(evaluation.result).baseline_out()
    assert (shown.status if shown else None) == ("pending" if setting == "on" else None)


def test_an_idle_judge_measures_the_due_baseline_and_fills_in_the_waiting_evaluations(
        database: Database, database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    problem = builtin_problem(database)
    judge = _judge(base_settings(tmp_path, database_url, compiled_baseline="on"), database)
    waiting = [_grade(judge, problem, database, monkeypatch, variant(i)) for i in range(2)]
    asked: list[EvalRequest] = []

    def measure(request: EvalRequest, *_args: object) -> CompiledBaseline:
        asked.append(request)
        return measured(2.0)

    monkeypatch.setattr("kernelgrade.worker.grader.measure_baseline", measure)
    assert judge.measure_a_due_baseline()
    assert not judge.measure_a_due_baseline()  # measured once, for both
    assert [r.problem.content_hash for r in asked] == [problem.content_hash]
    for submission_id in waiting:
        evaluation = evaluation_of(database, submission_id)
        assert evaluation.speedup_vs_compiled == pytest.approx(2.0 / CANDIDATE_MS)
        shown = StoredResult.read(evaluation.result).baseline_out()
        assert shown is not None and shown.status == "measured" and shown.median_ms == 2.0 and shown.reused
    with database.session() as session:
        stored = fresh_baseline(session, problem.id, DEVICE_CLASS, torch.__version__, WEEK, utcnow())
        entry = session.scalars(select(BoardEntryRow).where(BoardEntryRow.problem_id == problem.id)).one()
    assert stored is not None and stored.median_ms == 2.0
    assert entry.speedup_vs_compiled == pytest.approx(2.0 / CANDIDATE_MS)


def test_a_baseline_that_the_grader_fails_to_measure_is_left_alone_by_that_judge(
        database: Database, database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    problem = builtin_problem(database)
    judge = _judge(base_settings(tmp_path, database_url, compiled_baseline="on"), database)
    _grade(judge, problem, database, monkeypatch)

    def broken(*_args: object) -> CompiledBaseline:
        raise RuntimeError("the grader broke")

    monkeypatch.setattr("kernelgrade.worker.grader.measure_baseline", broken)
    assert judge.measure_a_due_baseline()
    assert not judge.measure_a_due_baseline()  # not retried in a loop


@pytest.fixture
def sqlite_database(tmp_path: Path) -> Iterator[tuple[Database, str]]:
    with fresh_database_url("sqlite", tmp_path) as url:
        database = Database.connect(url)
        upgrade(database)
        yield database, url
        database.dispose()


@pytest.mark.slow
def test_verdicts_come_first_and_the_baseline_is_filled_in_after(sqlite_database: tuple[Database, str],
                                                                  tmp_path: Path) -> None:
    """Real evaluator, real torch.compile on the CPU. SQLite only: storage tests cover Postgres."""
    database, url = sqlite_database
    problem = builtin_problem(database)
    first, second = (add_submission(database, problem, source) for source in (CORRECT, variant(1)))
    settings = base_settings(tmp_path, url, local_judges=-1, poll_seconds=0.2, compiled_baseline="on")
    pool = WorkerPool.start(settings, database)
    try:
        wait_until(lambda: evaluation_of(database, second.submission.id).status is JobStatus.DONE, END_TO_END_S,
                   "both jobs to be graded")
        graded = [evaluation_of(database, view.submission.id) for view in (first, second)]
        wait_until(lambda: all(evaluation_of(database, view.submission.id).speedup_vs_compiled is not None
                               for view in (first, second)), END_TO_END_S, "the baseline to be filled in")
    finally:
        pool.stop()
    assert [r.verdict for r in graded] == ["correct", "correct"], [r.error_summary for r in graded]
    # Both verdicts were recorded before any baseline: the second was claimed before the judge went idle.
    assert [StoredResult.read(r.result).baseline_out() for r in graded] == [PENDING_BASELINE] * 2
    results = [evaluation_of(database, view.submission.id) for view in (first, second)]
    shown = [StoredResult.read(r.result).baseline_out() for r in results]
    assert all(b is not None and b.status == "measured" and b.reused for b in shown), shown
    with database.session() as session:
        stored = fresh_baseline(session, problem.id, results[0].device_class or "", torch.__version__, WEEK,
                                utcnow())
    assert stored is not None and shown[0] is not None and stored.median_ms == shown[0].median_ms
    assert all(r.speedup_vs_compiled == pytest.approx(stored.median_ms / (r.candidate_median_ms or 0))
               for r in results if stored.median_ms)
