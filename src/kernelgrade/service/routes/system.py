"""GET /v1/health and /v1/workers."""

from __future__ import annotations

from datetime import timedelta
from typing import Literal

from fastapi import APIRouter
from sqlalchemy import text

from kernelgrade import __version__
from kernelgrade.service.auth import Context
from kernelgrade.service.errors import ApiError
from kernelgrade.service.routes.responses import errors
from kernelgrade.service.schemas import HealthOut, WorkerOut, WorkersOut
from kernelgrade.storage.clock import utcnow
from kernelgrade.storage.records import WorkerInfo
from kernelgrade.storage.workers import list_workers

router = APIRouter(prefix="/v1", tags=["system"])

# Workers silent for this long are dropped from the list; shorter silences show as "offline".
FORGET_AFTER = timedelta(minutes=10)


@router.get("/health", response_model=HealthOut, responses=errors(503))
def health(context: Context) -> HealthOut:
    """Liveness and the database connection."""
    try:
        with context.database.session() as session:
            session.execute(text("SELECT 1"))
            online = _online(list_workers(session, utcnow() - FORGET_AFTER), context.settings.lease_seconds)
    except Exception as exc:
        raise ApiError(503, "database_unavailable", f"the database does not answer: {type(exc).__name__}") from exc
    return HealthOut(status="ok", version=__version__, database=context.database.engine.dialect.name,
                     open_mode=context.settings.is_open, workers_online=online)


@router.get("/workers", response_model=WorkersOut)
def workers(context: Context) -> WorkersOut:
    """The judges: device class, host, versions, current job and last heartbeat."""
    with context.database.session() as session:
        found = list_workers(session, utcnow() - FORGET_AFTER)
    lease = context.settings.lease_seconds
    return WorkersOut(workers=[_worker_out(w, lease) for w in found])


WorkerState = Literal["idle", "busy", "offline"]


def _state(worker: WorkerInfo, lease_seconds: float) -> WorkerState:
    if utcnow() - worker.last_heartbeat > timedelta(seconds=lease_seconds):
        return "offline"
    return "busy" if worker.current_evaluation_id is not None else "idle"


def _online(found: list[WorkerInfo], lease_seconds: float) -> int:
    return sum(1 for w in found if _state(w, lease_seconds) != "offline")


def _worker_out(worker: WorkerInfo, lease_seconds: float) -> WorkerOut:
    return WorkerOut(name=worker.name, device_class=worker.device_class, serves=list(worker.serves), host=worker.host,
                     pid=worker.pid, versions=dict(worker.versions), current_evaluation_id=worker.current_evaluation_id,
                     state=_state(worker, lease_seconds),
                     started_at=worker.started_at, last_heartbeat=worker.last_heartbeat)
