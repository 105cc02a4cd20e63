"""The embedded worker pool in this process, on a real database: retries of grader faults up to the cap,
and a graceful stop that hands the running job back without charging an attempt."""

from __future__ import annotations

import dataclasses
import logging
import threading
from pathlib import Path

import pytest

from kernelgrade.evaluator import SubprocessLauncher
from kernelgrade.storage.database import Database
from kernelgrade.storage.problems import upsert_problem
from kernelgrade.storage.records import JobStatus
from kernelgrade.storage.submissions import get_submission
from kernelgrade.storage.workers import list_workers
from kernelgrade.worker.judge import Judge
from kernelgrade.worker.judges import JudgeSlot
from kernelgrade.worker.pool import WorkerPool
from tests.service.conftest import add_builtin, base_settings
from tests.service.servers import wait_until
from tests.service.sources import CORRECT, slow_correct
from tests.storage.builders import add_submission, new_problem

# Long enough for a slow correctness trial, short enough that a stuck test fails in reasonable time.
JOB_S = 120.0


def _evaluation(database: Database, submission_id: int):  # type: ignore[no-untyped-def]
    with database.session() as session:
        view = get_submission(session, submission_id)
    assert view is not None and view.evaluation is not None
    return view.evaluation


def test_a_grader_fault_is_retried_up_to_the_cap_then_reported(database: Database, database_url: str,
                                                                tmp_path: Path) -> None:
    source = (Path(__file__).parents[2] / "src/kernelgrade/problems/builtin/cpu/add_relu.py").read_text()
    broken = dataclasses.replace(new_problem("broken", source), content_hash="0" * 64)  # no longer loads
    with database.session() as session:
        problem = upsert_problem(session, broken).problem
    view = add_submission(database, problem, CORRECT)
    settings = base_settings(tmp_path, database_url, local_judges=-1, max_attempts=2, poll_seconds=0.2,
                             sandbox="none", allow_unsandboxed=True)
    pool = WorkerPool.start(settings, database)
    try:
        with database.session() as session:
            workers = list_workers(session, problem.created_at)
        assert [w.serves for w in workers] == [(workers[0].device_class, "cpu")]
        wait_until(lambda: _evaluation(database, view.submission.id).status is JobStatus.DONE, JOB_S, "the job")
    finally:
        pool.stop()
    evaluation = _evaluation(database, view.submission.id)
    assert evaluation.verdict == "error" and evaluation.attempts == 2
    assert evaluation.error_code == "grader_error" and "does not match its source" in (evaluation.error_summary or "")
    assert evaluation.last_error is not None and evaluation.last_error.startswith("attempt 1:")


def test_stopping_hands_the_running_job_back_uncharged(database: Database, database_url: str, tmp_path: Path,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    add_builtin(database)
    from kernelgrade.storage.problems import latest_problem

    with database.session() as session:
        problem = latest_problem(session, "add_relu")
    assert problem is not None
    view = add_submission(database, problem, slow_correct("/dev/null", 0.3))
    settings = base_settings(tmp_path, database_url, local_judges=-1, poll_seconds=0.2, sandbox="none",
                             allow_unsandboxed=True)
    pool = WorkerPool.start(settings, database)
    try:
        wait_until(lambda: _evaluation(database, view.submission.id).status is JobStatus.RUNNING, JOB_S, "running")
    finally:
        with caplog.at_level(logging.WARNING, logger="kernelgrade.worker.judge"):
            pool.stop()
            requeued = _evaluation(database, view.submission.id)
            pool.judges[0].thread.join(JOB_S)  # the abandoned evaluation ends, and must not be recorded
    assert requeued.status is JobStatus.QUEUED and requeued.attempts == 0
    assert requeued.last_error == "the server stopped during grading; requeued"
    final = _evaluation(database, view.submission.id)
    assert final.status is JobStatus.QUEUED and final.verdict is None
    assert "its result was discarded" in caplog.text
    with database.session() as session:
        assert list_workers(session, problem.created_at) == []


@pytest.mark.parametrize(("kind", "spares"), [("cuda", 3), ("cpu", 1)])
def test_a_gpu_judge_keeps_three_warm_children_and_a_cpu_judge_one(database: Database, database_url: str,
                                                                     tmp_path: Path, kind: str, spares: int) -> None:
    slot = JudgeSlot(f"{kind}0", kind, 0, f"{kind}-test", kind, ((kind, f"{kind}-test"),))
    judge = Judge(slot, "owner", base_settings(tmp_path, database_url), database, SubprocessLauncher(),
                  threading.Event(), threading.Event())
    try:
        assert judge.warm is not None and judge.warm.children.spares == spares
    finally:
        judge.close()
