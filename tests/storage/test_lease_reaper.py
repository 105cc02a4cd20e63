"""The reaper of dispatch = celery: expired leases are released once (to be sent again), jobs out of
attempts end with verdict `error`, live leases and other claims are left alone."""

from __future__ import annotations

import threading
from datetime import timedelta

from kernelgrade.storage.clock import utcnow
from kernelgrade.storage.database import Database
from kernelgrade.storage.jobs import LOST_WORKER, Lease, claim_next
from kernelgrade.storage.lease_reaper import Reaped, reap_expired
from kernelgrade.storage.records import JobStatus
from kernelgrade.storage.submissions import get_submission
from tests.storage.builders import CPU_ROUTES, add_problem, add_submission

LEASE_S = 30.0
LATER = timedelta(seconds=LEASE_S + 1)


def _claim(database: Database, owner: str, only: int | None = None, max_attempts: int = 3):  # type: ignore[no-untyped-def]
    with database.session() as session:
        return claim_next(session, Lease(owner, LEASE_S), CPU_ROUTES, max_attempts, only=only)


def _reap(database: Database, max_attempts: int = 3, later: timedelta = LATER) -> Reaped:
    with database.session() as session:
        return reap_expired(session, max_attempts, utcnow() + later)


def _status(database: Database, submission_id: int):  # type: ignore[no-untyped-def]
    with database.session() as session:
        view = get_submission(session, submission_id)
    assert view is not None and view.evaluation is not None
    return view.evaluation


def test_a_claim_can_name_its_job(database: Database) -> None:
    problem = add_problem(database)
    first = add_submission(database, problem, "a\n")
    second = add_submission(database, problem, "b\n")
    assert second.evaluation is not None and first.evaluation is not None
    job = _claim(database, "w1", only=second.evaluation.id)
    assert job is not None and job.evaluation_id == second.evaluation.id
    assert _claim(database, "w2", only=second.evaluation.id) is None  # delivered twice: graded once


def test_an_expired_lease_is_released_once_and_retried(database: Database) -> None:
    problem = add_problem(database)
    view = add_submission(database, problem, "a\n")
    assert view.evaluation is not None
    assert _claim(database, "dead-worker") is not None
    assert _reap(database, later=timedelta(0)) == Reaped((), ())  # the lease is still live
    assert _reap(database) == Reaped(((view.evaluation.id, "cpu"),), ())
    assert _reap(database) == Reaped((), ())  # released already: not sent twice
    evaluation = _status(database, view.submission.id)
    assert evaluation.status is JobStatus.QUEUED and evaluation.last_error == LOST_WORKER
    again = _claim(database, "w2", only=view.evaluation.id)
    assert again is not None and again.attempt == 2


def test_a_job_out_of_attempts_ends_with_the_reason(database: Database) -> None:
    problem = add_problem(database)
    view = add_submission(database, problem, "a\n")
    assert _claim(database, "w1", max_attempts=1) is not None
    assert _reap(database, max_attempts=1) == Reaped((), (view.evaluation.id,) if view.evaluation else ())
    evaluation = _status(database, view.submission.id)
    assert (evaluation.status, evaluation.verdict, evaluation.error_code) == (JobStatus.DONE, "error",
                                                                              "attempts_exhausted")
    assert "stopped before it finished" in (evaluation.error_summary or "")


def test_concurrent_reapers_release_each_job_once(database: Database) -> None:
    problem = add_problem(database)
    for n in range(6):
        add_submission(database, problem, f"{n}\n")
        assert _claim(database, f"w{n}") is not None
    results: list[Reaped] = []
    threads = [threading.Thread(target=lambda: results.append(_reap(database))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    sent = [evaluation_id for reaped in results for evaluation_id, _ in reaped.resend]
    assert sorted(sent) == sorted(set(sent)) and len(sent) == 6
