"""torch.compile baselines: found while fresh for the same problem version, device class and torch version;
failed ones are found too; the speedup against them follows the best result onto the board."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from kernelgrade.storage.baselines import fresh_baseline, record_baseline
from kernelgrade.storage.board_tables import rebuild
from kernelgrade.storage.database import Database
from kernelgrade.storage.leaderboards import problem_board
from kernelgrade.storage.records import BaselineRecord
from tests.storage.builders import PROBLEM_SOURCE, add_problem, add_submission, grade

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
WEEK = timedelta(days=7)
CPU = "cpu-x86_64"
TORCH = "2.5.1+cpu"


def baseline(age: timedelta, status: str = "measured", median_ms: float | None = 2.0,
             torch: str = TORCH) -> BaselineRecord:
    measured_at = NOW - age
    data = {"status": status, "backend": "inductor (mode default)", "measured_at": measured_at.isoformat(),
            "timing": {"median_ms": median_ms} if median_ms is not None else None, "message": ""}
    return BaselineRecord(torch=torch, status=status, median_ms=median_ms, measured_at=measured_at, data=data)


def _store(database: Database, problem_id: int, device_class: str, record: BaselineRecord) -> None:
    with database.session() as session:
        record_baseline(session, problem_id, device_class, record)


def _find(database: Database, problem_id: int, device_class: str = CPU, torch: str = TORCH) -> BaselineRecord | None:
    with database.session() as session:
        return fresh_baseline(session, problem_id, device_class, torch, WEEK, NOW)


def test_the_newest_fresh_baseline_is_found_with_its_json(database: Database) -> None:
    problem = add_problem(database)
    _store(database, problem.id, CPU, baseline(timedelta(days=3), median_ms=3.0))
    newest = baseline(timedelta(hours=1), median_ms=2.5)
    _store(database, problem.id, CPU, newest)
    _store(database, problem.id, CPU, baseline(timedelta(days=2), median_ms=2.0))  # recorded later, measured earlier
    assert _find(database, problem.id) == newest


def test_stale_other_device_other_torch_and_other_version_are_not_found(database: Database) -> None:
    problem = add_problem(database)
    changed = add_problem(database, source=PROBLEM_SOURCE + "# changed\n")  # a new version of the same name
    assert changed.id != problem.id and changed.name == problem.name
    _store(database, problem.id, CPU, baseline(WEEK + timedelta(minutes=1)))
    _store(database, problem.id, "cuda-h100", baseline(timedelta(hours=1)))
    _store(database, problem.id, CPU, baseline(timedelta(hours=1), torch="2.4.0+cpu"))
    _store(database, changed.id, CPU, baseline(timedelta(hours=1)))
    assert _find(database, problem.id) is None
    assert _find(database, problem.id, "cuda-h100") is not None
    assert _find(database, problem.id, torch="2.4.0+cpu") is not None
    assert _find(database, changed.id) is not None


def test_a_failed_baseline_is_reused_until_it_ages_out(database: Database) -> None:
    problem = add_problem(database)
    failed = baseline(timedelta(days=6), status="failed", median_ms=None)
    _store(database, problem.id, CPU, failed)
    found = _find(database, problem.id)
    assert found == failed and found.status == "failed" and found.median_ms is None
    with database.session() as session:
        assert fresh_baseline(session, problem.id, CPU, TORCH, WEEK, NOW + timedelta(days=1)) is None


def test_the_speedup_vs_compiled_of_the_best_result_is_on_the_board(database: Database) -> None:
    problem = add_problem(database)
    for i, (speedup, vs_compiled) in enumerate([(1.5, 0.9), (2.0, 1.2), (1.8, None)]):
        grade(database, add_submission(database, problem, f"s{i}\n"), "correct", speedup,
              speedup_vs_compiled=vs_compiled)
    grade(database, add_submission(database, problem, "t\n", submitter="bob"), "correct", 1.1)
    with database.session() as session:
        incremental = problem_board(session, problem.id, None, 10)
        rebuild(session, [problem.id])
    with database.session() as session:
        rebuilt = problem_board(session, problem.id, None, 10)
    assert [(e.submitter, e.speedup, e.speedup_vs_compiled) for e in incremental] == [
        ("alice", 2.0, 1.2), ("bob", 1.1, None)]
    assert rebuilt == incremental
