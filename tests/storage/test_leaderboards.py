"""Leaderboard queries: the best correct result per (submitter, model); flagged results are not on it."""

from __future__ import annotations

from kernelgrade.storage.board_tables import rebuild
from kernelgrade.storage.database import Database
from kernelgrade.storage.jobs import Lease, claim_next, finish_job
from kernelgrade.storage.leaderboards import flagged_count, problem_board, suite_board_data
from kernelgrade.storage.problems import upsert_problem
from kernelgrade.storage.records import ProblemRecord, SubmissionView, SuiteProblem
from tests.storage.builders import PROBLEM_SOURCE, add_problem, add_submission, grade, new_problem, outcome


def test_problem_board_keeps_the_best_correct_result_per_submitter_and_model(database: Database) -> None:
    problem = add_problem(database)
    results = [("alice", "m1", "correct", 1.5), ("alice", "m1", "correct", 2.5), ("alice", "m2", "correct", 0.5),
               ("bob", "m1", "incorrect", None), ("bob", "m1", "flagged", 50.0), ("carol", "m1", "correct", 1.1)]
    best_alice = 0
    for i, (submitter, model, verdict, speedup) in enumerate(results):
        view = add_submission(database, problem, f"src {i}\n", submitter=submitter, model=model)
        grade(database, view, verdict, speedup)
        best_alice = view.submission.id if speedup == 2.5 else best_alice
    with database.session() as session:
        board = problem_board(session, problem.id, None, 10)
        flagged = flagged_count(session, problem.id, None)
        other_device = problem_board(session, problem.id, "cuda-h100", 10)
    assert [(e.submitter, e.model, e.speedup) for e in board] == [
        ("alice", "m1", 2.5), ("carol", "m1", 1.1), ("alice", "m2", 0.5)]
    assert board[0].submission_id == best_alice and board[0].device_class == "cpu-x86_64"
    assert flagged == 1 and other_device == []


def test_suite_data_has_per_model_bests_over_latest_problems(database: Database) -> None:
    p1, p2 = add_problem(database, "p1"), add_problem(database, "p2")
    add_problem(database, "elsewhere", suite="level1")
    for i, (problem, model, verdict, speedup) in enumerate([
            (p1, "m1", "correct", 2.0), (p1, "m1", "correct", 3.0), (p2, "m1", "incorrect", None),
            (p2, "m2", "correct", 0.7)]):
        grade(database, add_submission(database, problem, f"s{i}\n", model=model), verdict, speedup)
    with database.session() as session:
        data = suite_board_data(session, "cpu", None)
        empty = suite_board_data(session, "nothing", None)
    assert data.problems == (SuiteProblem("p1", "cpu"), SuiteProblem("p2", "cpu"))
    assert {(s.model, s.device_class, s.problem_name, s.finished, s.correct, s.best_speedup) for s in data.stats} == {
        ("m1", "cpu-x86_64", "p1", 2, 2, 3.0), ("m1", "cpu-x86_64", "p2", 1, 0, None),
        ("m2", "cpu-x86_64", "p2", 1, 1, 0.7)}
    assert empty.problems == () and empty.stats == ()


def add_cuda_problem(database: Database, name: str, suite: str = "cpu") -> ProblemRecord:
    with database.session() as session:
        return upsert_problem(session, new_problem(name, f"# {name}\n{PROBLEM_SOURCE}", suite, device="cuda")).problem


def grade_on(database: Database, view: SubmissionView, routes: dict[str, str], speedup: float) -> None:
    """Claim the submission's job as a judge serving `routes` and record a correct result."""
    with database.session() as session:
        job = claim_next(session, Lease("grader", 60), routes, 3)
        assert job is not None and job.submission_id == view.submission.id
        assert finish_job(session, job.evaluation_id, "grader", outcome("correct", speedup))


def test_suite_data_keeps_each_device_class_and_each_problems_device_kind(database: Database) -> None:
    cpu_problem, cuda_problem = add_problem(database, "p_cpu"), add_cuda_problem(database, "p_cuda")
    grade_on(database, add_submission(database, cpu_problem, "a\n"), {"cpu": "cpu-x86_64"}, 1.4)
    grade_on(database, add_submission(database, cuda_problem, "b\n", device="cuda"), {"cuda": "cuda-h100"}, 3.0)
    grade_on(database, add_submission(database, cpu_problem, "c\n"), {"cpu": "cpu-aarch64"}, 0.9)
    with database.session() as session:
        data = suite_board_data(session, "cpu", None)
        h100 = suite_board_data(session, "cpu", "cuda-h100")
    assert data.problems == (SuiteProblem("p_cpu", "cpu"), SuiteProblem("p_cuda", "cuda"))
    assert [(s.device_class, s.problem_name, s.best_speedup) for s in data.stats] == [
        ("cpu-aarch64", "p_cpu", 0.9), ("cpu-x86_64", "p_cpu", 1.4), ("cuda-h100", "p_cuda", 3.0)]
    assert h100.problems == data.problems
    assert [(s.device_class, s.problem_name) for s in h100.stats] == [("cuda-h100", "p_cuda")]


def test_rebuilding_the_board_tables_reproduces_the_incremental_ones(database: Database) -> None:
    problem = add_problem(database)
    for i, (submitter, model, verdict, speedup) in enumerate([
            ("a", "m1", "correct", 1.0), ("a", "m1", "correct", 4.0), ("a", "m1", "correct", 2.0),
            ("b", "m1", "flagged", 9.0), ("b", "m2", "incorrect", None), ("c", "m2", "correct", 0.3)]):
        grade(database, add_submission(database, problem, f"r{i}\n", submitter=submitter, model=model), verdict,
              speedup)
    with database.session() as session:
        before = (problem_board(session, problem.id, None, 50), suite_board_data(session, None, None),
                  flagged_count(session, problem.id, None))
        rebuild(session, [problem.id])
    with database.session() as session:
        after = (problem_board(session, problem.id, None, 50), suite_board_data(session, None, None),
                 flagged_count(session, problem.id, None))
    assert after == before
    assert [(e.submitter, e.speedup) for e in after[0]] == [("a", 4.0), ("c", 0.3)] and after[2] == 1
