"""Judges as they report themselves: registration, heartbeats, and who is gone."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from kernelgrade.storage.clock import utcnow
from kernelgrade.storage.models import WorkerRow
from kernelgrade.storage.records import WorkerInfo


@dataclass(frozen=True)
class NewWorker:
    name: str
    device_class: str
    serves: tuple[str, ...]
    host: str
    pid: int
    versions: tuple[tuple[str, str], ...]
    device_memory_bytes: int | None = None  # None: a CPU judge


def register_worker(session: Session, worker: NewWorker, now: datetime | None = None) -> None:
    now = now or utcnow()
    row = session.get(WorkerRow, worker.name) or WorkerRow(name=worker.name, started_at=now)
    row.device_class, row.serves = worker.device_class, ",".join(worker.serves)
    row.host, row.pid = worker.host, worker.pid
    row.versions = dict(worker.versions)
    row.device_memory_bytes = worker.device_memory_bytes
    row.current_evaluation_id, row.last_heartbeat = None, now
    session.add(row)


def heartbeat(session: Session, current: dict[str, int | None], now: datetime | None = None) -> None:
    """Mark each named worker alive and record the job it is on."""
    now = now or utcnow()
    for name, evaluation_id in current.items():
        session.execute(update(WorkerRow).where(WorkerRow.name == name)
                        .values(last_heartbeat=now, current_evaluation_id=evaluation_id))


def remove_workers(session: Session, names: Sequence[str]) -> None:
    session.execute(delete(WorkerRow).where(WorkerRow.name.in_(list(names))))


def workers_on_host(session: Session, host: str) -> list[WorkerInfo]:
    return [worker_info(row) for row in session.scalars(select(WorkerRow).where(WorkerRow.host == host))]


def list_workers(session: Session, seen_since: datetime) -> list[WorkerInfo]:
    query = select(WorkerRow).where(WorkerRow.last_heartbeat >= seen_since).order_by(WorkerRow.name)
    return [worker_info(row) for row in session.scalars(query)]


def device_memory_by_class(session: Session) -> dict[str, int]:
    """Per device class, the least memory any judge of it has reported: a problem that fits that fits them all."""
    query = (select(WorkerRow.device_class, func.min(WorkerRow.device_memory_bytes))
             .where(WorkerRow.device_memory_bytes.is_not(None)).group_by(WorkerRow.device_class))
    return {str(cls): int(least) for cls, least in session.execute(query) if least is not None}


def worker_info(row: WorkerRow) -> WorkerInfo:
    versions = tuple(sorted((str(k), str(v)) for k, v in row.versions.items()))
    return WorkerInfo(name=row.name, device_class=row.device_class, serves=tuple(filter(None, row.serves.split(","))),
                      host=row.host, pid=row.pid, versions=versions,
                      current_evaluation_id=row.current_evaluation_id, started_at=row.started_at,
                      last_heartbeat=row.last_heartbeat)
