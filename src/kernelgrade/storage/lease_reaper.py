"""Finding jobs a broker lost: their worker died, so their lease expired and no one will finish them.

With a broker (dispatch = celery) a job runs only when a task carrying its id is delivered. A worker
killed mid-job takes its task with it (Redis redelivers an unacknowledged task only after its visibility
timeout), so the database, not the broker, decides: a job whose lease expired is released here exactly
once (a conditional UPDATE; concurrent reapers race on it and one wins) and the winner sends it again.
A job that used up its attempts is ended with verdict `error` instead (storage.jobs.fail_exhausted).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import ColumnElement, and_, select, update
from sqlalchemy.orm import Session

from kernelgrade.storage.clock import utcnow
from kernelgrade.storage.jobs import LOST_WORKER, _changed, fail_exhausted
from kernelgrade.storage.models import EvaluationRow
from kernelgrade.storage.records import UNFINISHED, JobStatus


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
        status=JobStatus.QUEUED.value, lease_owner=None, lease_expires=None, last_error=LOST_WORKER,
        progress_stage=None, progress_message=None, progress_done=0, progress_total=0)))

