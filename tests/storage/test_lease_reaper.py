"""The reaper of dispatch = celery: expired leases are released once (to be sent again), jobs out of
attempts end with verdict `error`, live leases and other claims are left alone, and queued jobs whose task
may have been lost are sent again once per (growing) wait."""

from __future__ import annotations

import threading
from datetime import timedelta

from sqlalchemy import update

from kernelgrade.storage.clock import utcnow
from kernelgrade.storage.database import Database
from kernelgrade.storage.jobs import LOST_WORKER, Lease, claim_next, expire_leases, requeue_job
from kernelgrade.storage.lease_reaper import Reaped, reap_expired, reap_unsent
from kernelgrade.storage.models import EvaluationRow
from kernelgrade.storage.records import JobStatus
from kernelgrade.storage.submissions import get_submission
from tests.storage.builders import CPU_ROUTES, add_problem, add_submission

LEASE_S = 30.0
LATER = timedelta(seconds=LEASE_S + 1)
RESEND_AFTER = timedelta(seconds=300)


def _claim(database: Database, owner: str, only: int | None = None, max_attempts: int = 3):  # type: ignore[no-untyped-def]
    with database.session() as session:
        return claim_next(session, Lease(owner, LEASE_S), CPU_ROUTES, max_attempts, only=only)


def _reap(database: Database, max_attempts: int = 3, later: timedelta = LATER) -> Reaped:
    with database.session() as session:
        return reap_expired(session, max_attempts, utcnow() + later)


def _unsent(database: Database, later: timedelta) -> tuple[tuple[int, str], ...]:
    with database.session() as session:
        return reap_unsent(session, RESEND_AFTER, utcnow() + later)


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


def test_a_queued_job_whose_task_may_be_lost_is_sent_again_once(database: Database) -> None:
    problem = add_problem(database)
    view = add_submission(database, problem, "a\n")
    assert view.evaluation is not None
    assert _unsent(database, timedelta(seconds=10)) == ()  # fresh: its task is on its way
    first = RESEND_AFTER + timedelta(seconds=1)
    assert _unsent(database, first) == ((view.evaluation.id, "cpu"),)
    assert _unsent(database, first) == ()  # marked sent: not again on the next pass
    assert _unsent(database, first + RESEND_AFTER / 2) == ()
    again = _claim(database, "w1", only=view.evaluation.id)  # the resent task is delivered and claims it
    assert again is not None and again.attempt == 1


def test_the_wait_between_sends_grows_with_the_jobs_age(database: Database) -> None:
    problem = add_problem(database)
    view = add_submission(database, problem, "a\n")
    assert view.evaluation is not None
    sent = [RESEND_AFTER * 8]  # it waited that long for its first resend (no worker for its queue)
    assert _unsent(database, sent[0]) == ((view.evaluation.id, "cpu"),)
    assert _unsent(database, sent[0] + RESEND_AFTER * 2) == ()  # waited less than its age at the last send
    assert _unsent(database, sent[0] * 2 + timedelta(seconds=1)) == ((view.evaluation.id, "cpu"),)


def _submitted_an_hour_ago(database: Database) -> None:
    with database.session() as session:
        session.execute(update(EvaluationRow).values(created_at=utcnow() - timedelta(hours=1)))


def test_leased_released_and_requeued_jobs_are_not_sent_as_lost(database: Database) -> None:
    problem = add_problem(database)
    leased, released, requeued, waiting = (add_submission(database, problem, f"{n}\n") for n in range(4))
    assert leased.evaluation and released.evaluation and requeued.evaluation and waiting.evaluation
    _submitted_an_hour_ago(database)
    assert _claim(database, "live", only=leased.evaluation.id) is not None
    assert _claim(database, "dead", only=released.evaluation.id) is not None
    assert _claim(database, "faulty", only=requeued.evaluation.id) is not None
    with database.session() as session:
        assert requeue_job(session, requeued.evaluation.id, "faulty", "grader error")
        assert expire_leases(session, ["dead"]) == 1
        assert reap_expired(session, 3).resend == ((released.evaluation.id, "cpu"),)
    # The live lease is the lease reaper's business; the released and requeued jobs were sent just now.
    assert _unsent(database, LATER) == ((waiting.evaluation.id, "cpu"),)


def test_concurrent_reapers_send_each_queued_job_once(database: Database) -> None:
    problem = add_problem(database)
    for n in range(6):
        add_submission(database, problem, f"{n}\n")
    results: list[tuple[tuple[int, str], ...]] = []
    later = RESEND_AFTER + timedelta(seconds=1)
    threads = [threading.Thread(target=lambda: results.append(_unsent(database, later))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    sent = [evaluation_id for found in results for evaluation_id, _ in found]
    assert sorted(sent) == sorted(set(sent)) and len(sent) == 6
