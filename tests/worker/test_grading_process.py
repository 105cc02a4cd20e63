"""Judges that grade in processes of their own: real verdicts through the pipe, a grader fault that keeps its
traceback, a grading process killed during an evaluation, whose job is graded again in a new one, what a
process prepared kept for the evaluations after, and which pools grade apart."""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from kernelgrade.evaluator import SubprocessLauncher
from kernelgrade.storage.database import Database
from kernelgrade.storage.records import JobStatus
from kernelgrade.worker.grader import GraderSpec
from kernelgrade.worker.grading_process import GradingFault, ProcessGrader
from kernelgrade.worker.grading_request import RequestBuilder, problem_spec
from kernelgrade.worker.judges import JudgeSlot
from kernelgrade.worker.pool import WorkerPool, grades_apart
from tests.service.conftest import base_settings, builtin_problem
from tests.service.servers import wait_until
from tests.service.sources import CORRECT, slow_correct
from tests.storage.builders import add_submission, evaluation_of

# Two evaluations of a small CPU problem, the first cut short, on a loaded host.
JOB_S = 240.0
# The end of the pipe read, then the warm children closed: seconds, more on a loaded host.
STOP_S = 60.0
# A judge's process: its grading process grades the pickled request (leaving warm children behind), then the
# script prints the grading process's pid and waits to be killed.
JUDGE = """
import pickle, sys, time
from pathlib import Path
from kernelgrade.config import Settings
from kernelgrade.evaluator import SubprocessLauncher
from kernelgrade.worker.grader import GraderSpec
from kernelgrade.worker.grading_process import ProcessGrader
settings = Settings(data_dir=Path(sys.argv[1]), sandbox="none", allow_unsandboxed=True)
grader = ProcessGrader(GraderSpec(settings, SubprocessLauncher(), "cpu"), "cpu0")
result = grader.evaluate(pickle.loads(Path(sys.argv[2]).read_bytes()), lambda progress: None)
print(grader.pid, result.verdict.value, flush=True)
time.sleep(600)
"""


def test_a_judge_in_its_own_process_grades_and_a_killed_process_costs_the_job_one_attempt(
        database: Database, database_url: str, tmp_path: Path) -> None:
    problem = builtin_problem(database)
    calls = tmp_path / "calls.log"
    slow = add_submission(database, problem, slow_correct(str(calls), 0.2))
    settings = base_settings(tmp_path, database_url, local_judges=-1, poll_seconds=0.2, sandbox="none",
                             allow_unsandboxed=True, judge_processes="on")
    pool = WorkerPool.start(settings, database)
    try:
        grader = pool.judges[0].grader
        assert isinstance(grader, ProcessGrader)
        # The candidate was called: the grading process is busy with it.
        wait_until(calls.exists, JOB_S, "the candidate's first call")
        first = grader.pid
        assert first is not None and first != os.getpid()
        os.kill(first, signal.SIGKILL)
        wait_until(lambda: evaluation_of(database, slow.submission.id).status is JobStatus.DONE, JOB_S, "the retry")
        second = add_submission(database, problem, CORRECT)
        wait_until(lambda: evaluation_of(database, second.submission.id).status is JobStatus.DONE, JOB_S, "the next")
        assert grader.pid not in (None, first)
    finally:
        pool.stop()
    retried = evaluation_of(database, slow.submission.id)
    assert retried.verdict == "correct" and retried.attempts == 2
    assert retried.last_error is not None and "grading process ended" in retried.last_error
    assert evaluation_of(database, second.submission.id).verdict == "correct"


def test_a_grader_fault_in_the_grading_process_is_raised_with_its_traceback(database: Database, database_url: str,
                                                                          tmp_path: Path) -> None:
    problem = builtin_problem(database)
    (tmp_path / "blocked").write_text("a file where the work dirs would go")
    # The judge keeps no spares, so the process starts; the evaluation's work dir cannot be made.
    settings = base_settings(tmp_path, database_url, data_dir=tmp_path / "blocked", warm_children=0)
    grader = ProcessGrader(GraderSpec(settings, SubprocessLauncher(), "cpu"), "cpu0")
    try:
        request = RequestBuilder(settings).build(problem_spec(problem), CORRECT, 0)
        with pytest.raises(GradingFault, match="Error") as raised:
            grader.evaluate(request, lambda progress: None)
        assert any("Traceback" in note for note in raised.value.__notes__)
    finally:
        grader.close()
    assert grader.pid is None


def test_a_grading_process_keeps_what_it_prepared_for_the_evaluations_after(
        database: Database, database_url: str, tmp_path: Path) -> None:
    problem = builtin_problem(database)
    settings = base_settings(tmp_path, database_url, sandbox="none", allow_unsandboxed=True)
    grader = ProcessGrader(GraderSpec(settings, SubprocessLauncher(), "cpu"), "cpu0")
    builder = RequestBuilder(settings)
    try:
        assert grader.keeps_trials
        done = grader.prepare(builder.build(problem_spec(problem), "", 0))
        assert done.finished and done.trials > 0 and done.computed == done.trials, done.note
        result = grader.evaluate(builder.build(problem_spec(problem), CORRECT, 0), lambda progress: None)
    finally:
        grader.close()
    extra = dict(result.extra)
    assert result.verdict.value == "correct"
    assert extra["trials_computed"] == "0" and int(extra["trials_kept"]) >= 3  # in its memory


def _slot(kind: str, index: int) -> JudgeSlot:
    return JudgeSlot(f"{kind}{index}", kind, index, f"{kind}-test", kind, ((kind, f"{kind}-test"),))


@pytest.mark.parametrize(("setting", "gpus", "apart"), [
    ("auto", 0, False), ("auto", 1, False), ("auto", 2, True), ("on", 0, True), ("off", 2, False)])
def test_judges_grade_apart_where_a_pool_has_two_gpu_judges_unless_told(tmp_path: Path, setting: str, gpus: int,
                                                                       apart: bool) -> None:
    slots = [_slot("cuda", i) for i in range(gpus)] or [_slot("cpu", 0)]
    assert grades_apart(base_settings(tmp_path, "sqlite://", judge_processes=setting), slots) is apart


def _running(process: psutil.Process) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_an_idle_grading_process_whose_judge_was_killed_stops_with_its_warm_children(
        database: Database, database_url: str, tmp_path: Path) -> None:
    settings = base_settings(tmp_path, database_url, sandbox="none", allow_unsandboxed=True)
    request = tmp_path / "request.pkl"
    request.write_bytes(pickle.dumps(RequestBuilder(settings).build(problem_spec(builtin_problem(database)),
                                                                    CORRECT, 0)))
    judge = subprocess.Popen([sys.executable, "-c", JUDGE, str(tmp_path), str(request)], stdout=subprocess.PIPE,
                             text=True)
    try:
        assert judge.stdout is not None
        pid, verdict = judge.stdout.readline().split()
        grading = psutil.Process(int(pid))
        tree = [grading, *grading.children(recursive=True)]
    finally:
        judge.kill()
        judge.wait()
    assert verdict == "correct" and len(tree) > 1  # the grading process kept children for the next job
    wait_until(lambda: not any(_running(p) for p in tree), STOP_S, "the grading process and its children to stop")
