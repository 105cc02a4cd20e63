"""The queries behind the web pages, on SQLite and Postgres."""

from __future__ import annotations

from kernelgrade.storage.database import Database
from kernelgrade.storage.page_data import (
    correct_speedups,
    device_classes,
    queue_depth,
    reference_medians,
    results_of,
)
from kernelgrade.storage.workers import NewWorker, device_memory_by_class, register_worker
from tests.storage.builders import add_problem, add_submission, grade


def test_speedups_baselines_and_queue_come_from_finished_and_unfinished_evaluations(database: Database) -> None:
    problem = add_problem(database)
    other = add_problem(database, "other", "print('other')\n")
    fast, wrong, slow = (add_submission(database, problem, f"# {n}\n", model=n) for n in ("fast", "wrong", "slow"))
    add_submission(database, other, "# elsewhere\n")
    grade(database, fast, speedup=2.0)
    grade(database, wrong, verdict="incorrect", speedup=None)
    grade(database, slow, speedup=0.5, device_class="cpu-arm")
    with database.session() as session:
        assert correct_speedups(session, problem.id) == [2.0, 0.5]
        assert correct_speedups(session, problem.id, "cpu-arm") == [0.5]
        assert [(m.device_class, m.median_ms) for m in reference_medians(session, problem.id)] == [
            ("cpu-x86_64", 3.0), ("cpu-arm", 3.0)]
        assert queue_depth(session) == 1  # the submission to `other`
        assert device_classes(session) == ["cpu-arm", "cpu-x86_64"]
        results = results_of(session, [fast.submission.id, wrong.submission.id, 12345])
    assert set(results) == {fast.submission.id, wrong.submission.id}
    assert results[fast.submission.id]["speedup"] == 2.0


def test_device_classes_include_judges_that_have_graded_nothing(database: Database) -> None:
    with database.session() as session:
        register_worker(session, NewWorker("judge-0", "cuda-h100", ("cuda",), "host", 1, ()))
    with database.session() as session:
        assert device_classes(session) == ["cuda-h100"]


def test_each_device_class_has_the_least_memory_its_judges_reported(database: Database) -> None:
    with database.session() as session:
        register_worker(session, NewWorker("a-0", "cuda-a100", ("cuda",), "a", 1, (), 79 << 30))
        register_worker(session, NewWorker("b-0", "cuda-a100", ("cuda",), "b", 1, (), 39 << 30))
        register_worker(session, NewWorker("c-0", "cpu-x86_64", ("cpu",), "c", 1, ()))
    with database.session() as session:
        assert device_memory_by_class(session) == {"cuda-a100": 39 << 30}
