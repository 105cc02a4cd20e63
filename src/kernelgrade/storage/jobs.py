"""The job queue kept in the evaluations table: claim with a lease, renew, record progress, finish.

A claim is one atomic UPDATE of the oldest claimable row (FOR UPDATE SKIP LOCKED on Postgres; SQLite runs
the single statement under its write lock). Every later write is conditional on the lease owner, so a
worker that lost its lease (it stalled, another took the job over) cannot record a second result.
A job whose lease expires is claimable again; each claim counts an attempt, and a job that used up
max_attempts ends with verdict `error` and the reason instead of being claimed again.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import ColumnElement, CursorResult, Update, and_, case, or_, select, update
from sqlalchemy.orm import Session

from kernelgrade.storage.board_tables import record_finished
from kernelgrade.storage.clock import utcnow
from kernelgrade.storage.models import EvaluationRow, SubmissionRow
from kernelgrade.storage.problems import problem_by_id
from kernelgrade.storage.records import (
    UNFINISHED,
    ClaimedJob,
    JobOutcome,
    JobStatus,
    ProblemRecord,
    ProgressUpdate,
)

LOST_WORKER = "the worker running it stopped before it finished (its lease expired)"


@dataclass(frozen=True)
class QueuedJob:
    evaluation_id: int
    requested_device: str
    problem: ProblemRecord
    source: str


@dataclass(frozen=True)
class Lease:
    owner: str
    seconds: float


def _free(now: datetime) -> ColumnElement[bool]:
    return or_(EvaluationRow.lease_owner.is_(None), EvaluationRow.lease_expires < now)


def _claimable(serves: Sequence[str], max_attempts: int, now: datetime, only: int | None) -> ColumnElement[bool]:
    condition = and_(EvaluationRow.status.in_(UNFINISHED), EvaluationRow.requested_device.in_(list(serves)),
                     EvaluationRow.attempts < max_attempts, _free(now))
    return condition if only is None else and_(condition, EvaluationRow.id == only)


def claim_next(session: Session, lease: Lease, routes: Mapping[str, str], max_attempts: int,
               now: datetime | None = None, *, only: int | None = None,
               preferred: Collection[int] = ()) -> ClaimedJob | None:
    """Take the oldest claimable job whose routing key is in `routes`, or None. `routes` maps each routing
    key the worker serves to the device class it grades such jobs on (recorded on the evaluation).
    `only`: claim that evaluation or nothing (a task carrying its id, delivered by a broker). `preferred`: take
    the oldest of these first, if any is claimable (the jobs whose builds compile-ahead has finished)."""
    now = now or utcnow()
    serves = list(routes)
    device_class = case(*((EvaluationRow.requested_device == key, cls) for key, cls in routes.items()))
    fail_exhausted(session, serves, max_attempts, now)
    first = (case((EvaluationRow.id.in_(list(preferred)), 0), else_=1),) if preferred else ()
    candidate = (select(EvaluationRow.id).where(_claimable(serves, max_attempts, now, only))
                 .order_by(*first, EvaluationRow.id).limit(1).with_for_update(skip_locked=True).scalar_subquery())
    claimed = session.execute(
        update(EvaluationRow)
        .where(EvaluationRow.id == candidate, EvaluationRow.status.in_(UNFINISHED), _free(now))
        .values(lease_owner=lease.owner, lease_expires=now + timedelta(seconds=lease.seconds),
                attempts=EvaluationRow.attempts + 1, status=JobStatus.COMPILING.value, device_class=device_class,
                started_at=case((EvaluationRow.started_at.is_(None), now), else_=EvaluationRow.started_at),
                last_error=case((EvaluationRow.lease_owner.is_not(None), LOST_WORKER),
                                else_=EvaluationRow.last_error),
                progress_stage=None, progress_message=None, progress_done=0, progress_total=0)
        .returning(EvaluationRow.id, EvaluationRow.submission_id, EvaluationRow.attempts,
                   EvaluationRow.requested_device)
        .execution_options(synchronize_session=False)
    ).first()
    if claimed is None:
        return None
    evaluation_id, submission_id, attempt, requested = claimed
    problem, source = _job_material(session, submission_id)
    return ClaimedJob(evaluation_id, submission_id, attempt, lease.owner, requested, problem, source)


def _job_material(session: Session, submission_id: int) -> tuple[ProblemRecord, str]:
    problem_id, source = session.execute(
        select(SubmissionRow.problem_id, SubmissionRow.source).where(SubmissionRow.id == submission_id)).one()
    problem = problem_by_id(session, problem_id)
    assert problem is not None  # a foreign key guarantees it
    return problem, source


def fail_exhausted(session: Session, serves: Sequence[str], max_attempts: int, now: datetime) -> list[int]:
    """End unleased jobs that used up their attempts with verdict `error` and the reason."""
    query = select(EvaluationRow.id, EvaluationRow.attempts, EvaluationRow.last_error, EvaluationRow.lease_owner).where(
        EvaluationRow.status.in_(UNFINISHED), EvaluationRow.requested_device.in_(list(serves)),
        EvaluationRow.attempts >= max_attempts, _free(now))
    ended = []
    for evaluation_id, attempts, last_error, lease_owner in session.execute(query).all():
        reason = LOST_WORKER if lease_owner is not None else (last_error or "unknown")
        summary = f"gave up after {attempts} attempt(s); the last one failed because {reason}"
        done = _changed(session, update(EvaluationRow)
                        .where(EvaluationRow.id == evaluation_id, EvaluationRow.status.in_(UNFINISHED), _free(now))
                        .values(status=JobStatus.DONE.value, verdict="error", error_code="attempts_exhausted",
                                error_summary=summary, last_error=reason, lease_owner=None, lease_expires=None,
                                finished_at=now))
        if done:
            record_finished(session, evaluation_id)
            ended.append(evaluation_id)
    return ended


def _changed(session: Session, statement: Update) -> int:
    """Run an UPDATE; how many rows it changed (0 when its conditions no longer hold)."""
    result = session.execute(statement.execution_options(synchronize_session=False))
    return int(cast("CursorResult[Any]", result).rowcount)


def _owned(evaluation_id: int, owner: str) -> ColumnElement[bool]:
    return and_(EvaluationRow.id == evaluation_id, EvaluationRow.lease_owner == owner,
                EvaluationRow.status.in_(UNFINISHED))


def record_progress(session: Session, evaluation_id: int, owner: str, status: JobStatus,
                    progress: ProgressUpdate) -> bool:
    """Show where the job is; False if the lease is no longer ours."""
    return bool(_changed(session, update(EvaluationRow).where(_owned(evaluation_id, owner)).values(
        status=status.value, progress_stage=progress.stage, progress_message=progress.message[:500],
        progress_done=progress.done, progress_total=progress.total)))


def finish_job(session: Session, evaluation_id: int, owner: str, outcome: JobOutcome,
               now: datetime | None = None) -> bool:
    """Record the final result once; False (and nothing written) if the lease is no longer ours."""
    env = outcome.environment
    done = _changed(session, update(EvaluationRow).where(_owned(evaluation_id, owner)).values(
                status=JobStatus.DONE.value, verdict=outcome.verdict, result=outcome.result,
                speedup=outcome.speedup, speedup_vs_compiled=outcome.speedup_vs_compiled,
                reference_median_ms=outcome.reference_median_ms,
                candidate_median_ms=outcome.candidate_median_ms, error_code=outcome.error_code,
                error_summary=outcome.error_summary, lease_owner=None, lease_expires=None,
                finished_at=now or utcnow(), device_name=env and env.device_name, driver_version=env and env.driver,
                torch_version=env and env.torch, cuda_version=env and env.cuda, sandbox=env and env.sandbox,
                host=env and env.host))
    if not done:
        return False
    record_finished(session, evaluation_id)
    return True


def requeue_job(session: Session, evaluation_id: int, owner: str, reason: str, *, refund_attempt: bool = False) -> bool:
    """Give the job back to the queue (a grader fault to retry, or a worker shutting down). With no owner,
    lease_expires records when it was queued again (its task is sent now), see storage.lease_reaper."""
    attempts = EvaluationRow.attempts - 1 if refund_attempt else EvaluationRow.attempts
    return bool(_changed(session, update(EvaluationRow).where(_owned(evaluation_id, owner)).values(
        status=JobStatus.QUEUED.value, lease_owner=None, lease_expires=utcnow(), attempts=attempts, last_error=reason,
        progress_stage=None, progress_message=None, progress_done=0, progress_total=0)))


def renew_leases(session: Session, held: Mapping[str, int], seconds: float, now: datetime | None = None) -> int:
    """Extend the lease of each (owner -> the job it is working on). Only jobs a worker is really working on
    are renewed, so a job it dropped (a fault while recording, say) lapses and is retried."""
    expires = (now or utcnow()) + timedelta(seconds=seconds)
    renewed = 0
    for owner, evaluation_id in held.items():
        renewed += _changed(session, update(EvaluationRow).where(_owned(evaluation_id, owner))
                            .values(lease_expires=expires))
    return renewed


def expire_leases(session: Session, owners: Sequence[str], now: datetime | None = None) -> int:
    """Make the jobs of owners known to be dead claimable now instead of at their lease expiry."""
    if not owners:
        return 0
    return _changed(session, update(EvaluationRow)
                    .where(EvaluationRow.lease_owner.in_(list(owners)), EvaluationRow.status.in_(UNFINISHED))
                    .values(lease_expires=(now or utcnow()) - timedelta(seconds=1)))


def queued_jobs(session: Session, serves: Sequence[str], limit: int, now: datetime | None = None) -> list[int]:
    """The ids of the next unclaimed jobs in claim order (what a compile-ahead thread looks at)."""
    query = (select(EvaluationRow.id)
             .where(EvaluationRow.status.in_(UNFINISHED), EvaluationRow.requested_device.in_(list(serves)),
                    _free(now or utcnow()))
             .order_by(EvaluationRow.id).limit(limit))
    return list(session.scalars(query))


def queued_job(session: Session, evaluation_id: int) -> QueuedJob | None:
    row = session.execute(select(EvaluationRow.requested_device, EvaluationRow.submission_id)
                          .where(EvaluationRow.id == evaluation_id)).first()
    if row is None:
        return None
    requested, submission_id = row
    problem, source = _job_material(session, submission_id)
    return QueuedJob(evaluation_id, requested, problem, source)
