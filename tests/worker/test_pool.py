"""The embedded worker pool in this process, on a real database: retries of grader faults up to the cap,
and a graceful stop that hands the running job back without charging an attempt."""

from __future__ import annotations

import dataclasses
import logging
import os
import subprocess
import sys
import threading
from datetime import datetime, timedelta
from pathlib import Path

import psutil
import pytest

from kernelgrade.evaluator import SubprocessLauncher
from kernelgrade.storage.clock import utcnow
from kernelgrade.storage.database import Database
from kernelgrade.storage.problems import upsert_problem
from kernelgrade.storage.records import JobStatus, WorkerInfo
from kernelgrade.storage.workers import list_workers
from kernelgrade.worker.grader import InProcessGrader
from kernelgrade.worker.judge import Judge
from kernelgrade.worker.judges import JudgeSlot
from kernelgrade.worker.pool import START_TIME_SLACK_S, WorkerPool, worker_gone
from tests.service.conftest import add_builtin, base_settings
from tests.service.servers import wait_until
from tests.service.sources import CORRECT, slow_correct
from tests.storage.builders import add_submission, evaluation_of, new_problem

# Long enough for a slow correctness trial, short enough that a stuck test fails in reasonable time.
JOB_S = 120.0
# A child that exits at once is a zombie (or reaped) within milliseconds; seconds on a loaded host.
EXIT_S = 30.0


@pytest.mark.parametrize("apart", ["off", "on"])
def test_a_grader_fault_is_retried_up_to_the_cap_then_reported(database: Database, database_url: str,
                                                                tmp_path: Path, apart: str) -> None:
    source = (Path(__file__).parents[2] / "src/kernelgrade/problems/builtin/cpu/add_relu.py").read_text()
    broken = dataclasses.replace(new_problem("broken", source), content_hash="0" * 64)  # no longer loads
    with database.session() as session:
        problem = upsert_problem(session, broken).problem
    view = add_submission(database, problem, CORRECT)
    settings = base_settings(tmp_path, database_url, local_judges=-1, max_attempts=2, poll_seconds=0.2,
                             sandbox="none", allow_unsandboxed=True, judge_processes=apart)
    pool = WorkerPool.start(settings, database)
    try:
        with database.session() as session:
            workers = list_workers(session, problem.created_at)
        assert [w.serves for w in workers] == [(workers[0].device_class, "cpu")]
        wait_until(lambda: evaluation_of(database, view.submission.id).status is JobStatus.DONE, JOB_S, "the job")
    finally:
        pool.stop()
    evaluation = evaluation_of(database, view.submission.id)
    assert evaluation.verdict == "error" and evaluation.attempts == 2
    assert evaluation.error_code == "grader_error" and "does not match its source" in (evaluation.error_summary or "")
    assert evaluation.last_error is not None and evaluation.last_error.startswith("attempt 1:")


@pytest.mark.parametrize("apart", ["off", "on"])
def test_stopping_hands_the_running_job_back_uncharged(database: Database, database_url: str, tmp_path: Path,
                                                       caplog: pytest.LogCaptureFixture, apart: str) -> None:
    add_builtin(database)
    from kernelgrade.storage.problems import latest_problem

    with database.session() as session:
        problem = latest_problem(session, "add_relu")
    assert problem is not None
    view = add_submission(database, problem, slow_correct("/dev/null", 0.3))
    settings = base_settings(tmp_path, database_url, local_judges=-1, poll_seconds=0.2, sandbox="none",
                             allow_unsandboxed=True, judge_processes=apart)
    pool = WorkerPool.start(settings, database)
    try:
        wait_until(lambda: evaluation_of(database, view.submission.id).status is JobStatus.RUNNING, JOB_S, "running")
    finally:
        with caplog.at_level(logging.WARNING, logger="kernelgrade.worker.judge"):
            pool.stop()
            requeued = evaluation_of(database, view.submission.id)
            pool.judges[0].thread.join(JOB_S)  # the abandoned evaluation ends, and must not be recorded
    assert requeued.status is JobStatus.QUEUED and requeued.attempts == 0
    assert requeued.last_error == "the server stopped during grading; requeued"
    final = evaluation_of(database, view.submission.id)
    assert final.status is JobStatus.QUEUED and final.verdict is None
    assert "its result was discarded" in caplog.text
    with database.session() as session:
        assert list_workers(session, problem.created_at) == []


@pytest.mark.parametrize(("kind", "spares"), [("cuda", 8), ("cpu", 1)])
def test_a_gpu_judge_keeps_eight_warm_children_and_a_cpu_judge_one(database: Database, database_url: str,
                                                                     tmp_path: Path, kind: str, spares: int) -> None:
    slot = JudgeSlot(f"{kind}0", kind, 0, f"{kind}-test", kind, ((kind, f"{kind}-test"),))
    judge = Judge(slot, "owner", base_settings(tmp_path, database_url), database, SubprocessLauncher(),
                  threading.Event(), threading.Event())
    try:
        assert isinstance(judge.grader, InProcessGrader)
        assert judge.grader.warm is not None and judge.grader.warm.children.spares == spares
    finally:
        judge.close()


def _registered(pid: int, started_at: datetime) -> WorkerInfo:
    return WorkerInfo(name=f"host:{pid}:cpu0", device_class="cpu-test", serves=("cpu",), host="host", pid=pid,
                      versions=(), current_evaluation_id=None, started_at=started_at, last_heartbeat=started_at)


def test_a_worker_whose_process_runs_is_not_gone() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert not worker_gone(_registered(child.pid, utcnow()))
    finally:
        child.kill()
        child.wait()


def test_a_worker_is_gone_when_its_pid_is_free_a_zombie_or_our_own() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    registered = _registered(child.pid, utcnow())
    try:
        wait_until(lambda: psutil.Process(child.pid).status() == psutil.STATUS_ZOMBIE, EXIT_S, "the child's exit")
        assert worker_gone(registered)
    finally:
        child.wait()
    assert not psutil.pid_exists(child.pid) and worker_gone(registered)
    assert worker_gone(_registered(os.getpid(), utcnow()))


def test_a_worker_is_gone_when_its_pid_belongs_to_a_process_started_after_it_registered() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        long_ago = utcnow() - timedelta(seconds=START_TIME_SLACK_S + 60)
        assert worker_gone(_registered(child.pid, long_ago))
        assert not worker_gone(_registered(child.pid, utcnow() - timedelta(seconds=START_TIME_SLACK_S / 2)))
    finally:
        child.kill()
        child.wait()
