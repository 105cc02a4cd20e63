"""What the route handlers share: settings, the database, the rate limiter and the dispatch of queued jobs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from fastapi import Request

from kernelgrade.config import Settings
from kernelgrade.service.rate_limit import RateLimiter
from kernelgrade.storage.database import Database


class Dispatch(Protocol):
    """Carries queued jobs to judges: the embedded worker pool, or a broker's workers (dispatch = celery).
    `kernelgrade serve` picks one (kernelgrade/serve.py); the API knows it only through this."""

    def start(self) -> None: ...

    def job_queued(self, evaluation_id: int, routing_key: str) -> None: ...

    def stop(self) -> None: ...


@dataclass
class ServiceContext:
    settings: Settings
    database: Database
    limiter: RateLimiter = field(init=False)
    # None: jobs stay queued in the database for judges that look there themselves.
    dispatch: Dispatch | None = None

    def __post_init__(self) -> None:
        self.limiter = RateLimiter(self.database)

    def job_queued(self, evaluation_id: int, routing_key: str) -> None:
        if self.dispatch is not None:
            self.dispatch.job_queued(evaluation_id, routing_key)


def get_context(request: Request) -> ServiceContext:
    context: ServiceContext = request.app.state.context
    return context
