"""How the API's queued jobs reach judges, as `kernelgrade serve` wires it (service.context.Dispatch).

LocalDispatch runs the embedded pool in the API's process and wakes it on each new job; BrokerDispatch sends
each job's id to the broker queue of its routing key, for `kernelgrade worker` processes elsewhere.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kernelgrade.config import Settings
from kernelgrade.storage.database import Database
from kernelgrade.worker.pool import WorkerPool

if TYPE_CHECKING:
    # Celery is the `scaleout` extra: the embedded `serve` runs without it.
    from kernelgrade.worker.celery_app import CelerySender


class LocalDispatch:
    def __init__(self, settings: Settings, database: Database) -> None:
        self.settings, self.database = settings, database
        self.pool: WorkerPool | None = None

    def start(self) -> None:
        self.pool = WorkerPool.start(self.settings, self.database)

    def job_queued(self, evaluation_id: int, routing_key: str) -> None:
        if self.pool is not None:
            self.pool.notify()

    def stop(self) -> None:
        if self.pool is not None:
            self.pool.stop()
            self.pool = None


class BrokerDispatch:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.sender: CelerySender | None = None

    def start(self) -> None:
        from kernelgrade.worker.celery_app import CelerySender

        self.sender = CelerySender(self.settings)

    def job_queued(self, evaluation_id: int, routing_key: str) -> None:
        if self.sender is not None:
            self.sender.send(evaluation_id, routing_key)

    def stop(self) -> None:
        if self.sender is not None:
            self.sender.close()
            self.sender = None
