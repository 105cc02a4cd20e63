"""Finding jobs a broker lost: their worker died, so their lease expired and no one will finish them.

With a broker (dispatch = celery) a job runs only when a task carrying its id is delivered. A worker
killed mid-job takes its task with it (Redis redelivers an unacknowledged task only after its visibility
timeout), so the database, not the broker, decides: a job whose lease expired is released here exactly
once (a conditional UPDATE; concurrent reapers race on it and one wins) and the winner sends it again.
A job that used up its attempts is ended with verdict `error` instead (storage.jobs.fail_exhausted).

A task can also be lost before any worker claims its job (a broker restarted without persistence, the API
stopped between committing the job and sending its task, a send that raised): the job stays queued with no
lease, and nothing else would ever send it. So queued jobs that waited too long since they were last sent
are sent again too (reap_unsent). An unleased job has no other use for `lease_expires`: there it holds when
the job was last put back in the queue and sent (NULL: never since it was created, at `created_at`), so no
schema change is needed. Sending twice is harmless (a delivered task claims the job or skips it), but a
long backlog must not fill the broker with copies, so the wait before each new send grows with the job's age.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, and_, func, select, update
from sqlalchemy.orm import Session

from kernelgrade.storage.clock import utcnow
from kernelgrade.storage.jobs import LOST_WORKER, _changed, fail_exhausted
from kernelgrade.storage.models import EvaluationRow
from kernelgrade.storage.records import UNFINISHED, JobStatus

# The longest a queued job waits between two sends, however old it is: a task lost from a backlog that has
# waited for hours is found within an hour, and such a job adds at most one task per hour to the broker.
MAX_RESEND_GAP = timedelta(hours=1)


@dataclass(frozen=True)
class Reaped:
    """What one pass of the reaper did: jobs to send again (id, routing key), and jobs it ended."""

    resend: tuple[tuple[int, str], ...]
    ended: tuple[int, ...]


def _expired(now: datetime) -> ColumnElement[bool]:
    return and_(EvaluationRow.status.in_(UNFINISHED), EvaluationRow.lease_owner.is_not(None),
                EvaluationRow.lease_expires < now)


def reap_expired(session: Session, max_attempts: int, now: datetime | None = None) -> Reaped:
    now = now or utcnow()
    rows = session.execute(select(EvaluationRow.id, EvaluationRow.lease_owner, EvaluationRow.requested_device,
                                  EvaluationRow.attempts).where(_expired(now))).all()
    exhausted = sorted({device for _, _, device, attempts in rows if attempts >= max_attempts})
    ended = fail_exhausted(session, exhausted, max_attempts, now) if exhausted else []
    resend = [(evaluation_id, device) for evaluation_id, owner, device, attempts in rows
              if attempts < max_attempts and owner is not None and _release(session, evaluation_id, owner, now)]
    return Reaped(tuple(resend), tuple(ended))


def _release(session: Session, evaluation_id: int, owner: str, now: datetime) -> bool:
    """Put the job back in the queue if its lease is still the expired one we saw (no one took it since)."""
    return bool(_changed(session, update(EvaluationRow).where(
        EvaluationRow.id == evaluation_id, EvaluationRow.lease_owner == owner, EvaluationRow.lease_expires < now,
        EvaluationRow.status.in_(UNFINISHED)).values(
        status=JobStatus.QUEUED.value, lease_owner=None, lease_expires=now, last_error=LOST_WORKER,
        progress_stage=None, progress_message=None, progress_done=0, progress_total=0)))


def _last_sent() -> ColumnElement[datetime]:
    return func.coalesce(EvaluationRow.lease_expires, EvaluationRow.created_at)


def reap_unsent(session: Session, resend_after: timedelta, now: datetime | None = None) -> tuple[tuple[int, str], ...]:
    """Queued jobs whose task may have been lost, to send again (id, routing key): each is marked sent now by
    exactly one caller (a conditional UPDATE, like _release), so concurrent reapers send it once."""
    now = now or utcnow()
    rows = session.execute(select(EvaluationRow.id, EvaluationRow.requested_device, EvaluationRow.created_at,
                                  _last_sent()).where(
        EvaluationRow.status.in_(UNFINISHED), EvaluationRow.lease_owner.is_(None),
        _last_sent() < now - resend_after)).all()
    return tuple((evaluation_id, device) for evaluation_id, device, created, sent in rows
                 if _due(created, sent, resend_after, now) and _mark_sent(session, evaluation_id, sent, now))


def _due(created: datetime, sent: datetime, resend_after: timedelta, now: datetime) -> bool:
    """Waited since its last send at least resend_after, and at least as long as it had waited before that
    send (up to MAX_RESEND_GAP): a task lost at once is found after resend_after, while a job waiting out a
    long backlog is sent again about log2(wait / resend_after) times instead of once every resend_after."""
    gap = min(max(resend_after, sent - created), max(resend_after, MAX_RESEND_GAP))
    return now - sent >= gap


def _mark_sent(session: Session, evaluation_id: int, sent: datetime, now: datetime) -> bool:
    """Record the send if no one claimed, released or sent the job since we read it."""
    return bool(_changed(session, update(EvaluationRow).where(
        EvaluationRow.id == evaluation_id, EvaluationRow.lease_owner.is_(None), EvaluationRow.status.in_(UNFINISHED),
        _last_sent() <= sent).values(lease_expires=now)))
