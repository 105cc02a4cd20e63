"""What the route handlers share: settings, the database, the rate limiter and (embedded) the worker pool."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from fastapi import Request

from kernelgrade.config import Settings
from kernelgrade.service.rate_limit import RateLimiter
from kernelgrade.storage.database import Database


class Waker(Protocol):
    def notify(self) -> None: ...


class Sender(Protocol):
    """Carries a queued job's id to the workers of its routing key (a broker, with dispatch = celery)."""

    def send(self, evaluation_id: int, routing_key: str) -> None: ...

    def close(self) -> None: ...


@dataclass
class ServiceContext:
    settings: Settings
    database: Database
    limiter: RateLimiter = field(init=False)
    pool: Waker | None = None
    sender: Sender | None = None

    def __post_init__(self) -> None:
        self.limiter = RateLimiter(self.database)

    def job_queued(self, evaluation_id: int, routing_key: str) -> None:
        if self.pool is not None:
            self.pool.notify()
        if self.sender is not None:
            self.sender.send(evaluation_id, routing_key)


def get_context(request: Request) -> ServiceContext:
    context: ServiceContext = request.app.state.context
    return context
