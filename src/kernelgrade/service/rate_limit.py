"""Per-key request rate limit: fixed one-minute windows counted in the database, so that the limit holds for
the whole deployment, however many API processes serve it.

The database rather than Redis: every deployment has one (the embedded SQLite file, the scale-out's
Postgres), and Redis exists only in scale-out with the celery dispatch. A fixed window lets a client spend
one window's allowance at its end and the next at the start of the following one; a sliding log would count
exactly but write a row per request.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from kernelgrade.storage.clock import utcnow
from kernelgrade.storage.database import Database
from kernelgrade.storage.rate_limits import count_request

WINDOW = timedelta(minutes=1)


class RateLimiter:
    def __init__(self, database: Database, clock: Callable[[], datetime] = utcnow) -> None:
        self._database = database
        self._clock = clock

    def acquire(self, key: str, per_minute: int) -> float | None:
        """Count one request; None if allowed, else the seconds until one more would be."""
        now = self._clock()
        with self._database.session() as session:
            counted = count_request(session, key, now, WINDOW)
        if counted.count <= per_minute:
            return None
        return (counted.window_end - now).total_seconds()
