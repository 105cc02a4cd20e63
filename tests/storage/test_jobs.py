"""The job queue: atomic claims, leases, attempts, the attempt cap, and results recorded exactly once."""

from __future__ import annotations

import threading
from datetime import timedelta

from kernelgrade.storage.clock import utcnow
from kernelgrade.storage.database import Database
from kernelgrade.storage.jobs import (
    LOST_WORKER,
    Lease,
    claim_next,
    expire_leases,
    finish_job,
    queued_jobs,
    record_progress,
    renew_leases,
    requeue_job,
)
from kernelgrade.storage.records import JobStatus, ProgressUpdate
from tests.storage.builders import CPU_ROUTES, add_problem, add_submission, evaluation_of, outcome

LEASE_S = 30.0


def _claim(database: Database, owner: str, now=None, routes=CPU_ROUTES, max_attempts: int = 3,  # type: ignore[no-untyped-def]
           preferred: frozenset[int] = frozenset()):
    with database.session() as session:
        return claim_next(session, Lease(owner, LEASE_S), routes, max_attempts, now=now, preferred=preferred)


def test_claims_take_the_oldest_job_once(database: Database) -> None:
    problem = add_problem(database)
    first = add_submission(database, problem, "a\n")
    second = add_submission(database, problem, "b\n")
    job_a, job_b, none = _claim(database, "w1"), _claim(database, "w2"), _claim(database, "w3")
    assert job_a is not None and job_a.submission_id == first.submission.id and job_a.attempt == 1
    assert job_b is not None and job_b.submission_id == second.submission.id
    assert none is None
    assert job_a.source == "a\n" and job_a.problem.name == "add_relu"
    evaluation = evaluation_of(database, first.submission.id)
    assert evaluation.status is JobStatus.COMPILING and evaluation.device_class == "cpu-x86_64"
    assert evaluation.started_at is not None


def test_jobs_whose_builds_ended_are_claimed_first_and_then_the_oldest(database: Database) -> None:
    problem = add_problem(database)
    ids = [view.evaluation.id for view in (add_submission(database, problem, f"{c}\n") for c in "abcd")
           if view.evaluation is not None]
    built = frozenset({ids[3], ids[1]})
    claimed = [_claim(database, f"w{i}", preferred=built) for i in range(4)]
    assert [job.evaluation_id for job in claimed if job is not None] == [ids[1], ids[3], ids[0], ids[2]]


def test_jobs_are_routed_by_device(database: Database) -> None:
    problem = add_problem(database)
    add_submission(database, problem, "gpu job\n", device="cuda")
    assert _claim(database, "cpu-judge") is None
    job = _claim(database, "gpu-judge", routes={"cuda-h100": "cuda-h100", "cuda": "cuda-h100"})
    assert job is not None and job.requested_device == "cuda"


def test_an_expired_lease_is_taken_over_and_the_old_owner_cannot_record(database: Database) -> None:
    problem = add_problem(database)
    view = add_submission(database, problem)
    first = _claim(database, "dead")
    assert first is not None
    assert _claim(database, "other") is None  # the lease still holds
    later = utcnow() + timedelta(seconds=LEASE_S + 1)
    second = _claim(database, "alive", now=later)
    assert second is not None and second.attempt == 2 and second.evaluation_id == first.evaluation_id
    with database.session() as session:
        assert not finish_job(session, first.evaluation_id, "dead", outcome())
        assert not record_progress(session, first.evaluation_id, "dead", JobStatus.RUNNING, ProgressUpdate("load", ""))
        assert finish_job(session, second.evaluation_id, "alive", outcome("correct", 2.0))
        assert not finish_job(session, second.evaluation_id, "alive", outcome("correct", 9.0))
    evaluation = evaluation_of(database, view.submission.id)
    assert evaluation.status is JobStatus.DONE and evaluation.verdict == "correct"
    assert evaluation.speedup == 2.0 and evaluation.attempts == 2 and evaluation.last_error == LOST_WORKER


def test_a_job_whose_worker_dies_every_time_ends_with_error_at_the_cap(database: Database) -> None:
    problem = add_problem(database)
    view = add_submission(database, problem)
    now = utcnow()
    for attempt in range(1, 3):
        job = _claim(database, f"w{attempt}", now=now, max_attempts=2)
        assert job is not None and job.attempt == attempt
        now += timedelta(seconds=LEASE_S + 1)
    assert _claim(database, "w3", now=now, max_attempts=2) is None
    evaluation = evaluation_of(database, view.submission.id)
    assert evaluation.status is JobStatus.DONE and evaluation.verdict == "error"
    assert evaluation.error_code == "attempts_exhausted" and evaluation.attempts == 2
    assert evaluation.error_summary is not None and "gave up after 2 attempt(s)" in evaluation.error_summary
    assert LOST_WORKER in evaluation.error_summary


def test_grader_errors_are_requeued_and_a_stopped_worker_is_not_charged(database: Database) -> None:
    problem = add_problem(database)
    view = add_submission(database, problem)
    job = _claim(database, "w1")
    assert job is not None
    with database.session() as session:
        assert requeue_job(session, job.evaluation_id, "w1", "attempt 1: grader error")
    again = _claim(database, "w2")
    assert again is not None and again.attempt == 2
    with database.session() as session:
        assert requeue_job(session, again.evaluation_id, "w2", "server stopped", refund_attempt=True)
    third = _claim(database, "w3")
    assert third is not None and third.attempt == 2
    assert evaluation_of(database, view.submission.id).last_error == "server stopped"


def test_heartbeats_renew_leases_and_dead_owners_release_them(database: Database) -> None:
    problem = add_problem(database)
    add_submission(database, problem)
    job = _claim(database, "w1")
    assert job is not None
    with database.session() as session:
        assert renew_leases(session, {"w1": job.evaluation_id + 1}, 3600.0) == 0  # not the job it holds
        assert renew_leases(session, {"w1": job.evaluation_id}, 3600.0) == 1
    assert _claim(database, "w2", now=utcnow() + timedelta(seconds=LEASE_S + 1)) is None
    with database.session() as session:
        assert queued_jobs(session, ["cpu"], 10) == []
        assert expire_leases(session, ["w1"]) == 1
        assert queued_jobs(session, ["cpu"], 10) == [job.evaluation_id]
    taken = _claim(database, "w2")
    assert taken is not None and taken.attempt == 2


def test_concurrent_claims_never_hand_out_a_job_twice(database: Database) -> None:
    problem = add_problem(database)
    total = 30
    for i in range(total):
        add_submission(database, problem, f"job {i}\n")
    claimed: list[int] = []
    lock = threading.Lock()

    def worker(name: str) -> None:
        while (job := _claim(database, name)) is not None:
            with lock:
                claimed.append(job.evaluation_id)

    threads = [threading.Thread(target=worker, args=(f"w{i}",)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(claimed) == total and len(set(claimed)) == total
