"""Per-key request rate limit: a sliding one-minute window kept in this process's memory (the embedded
service is one process; behind several API processes the limit applies per process)."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

WINDOW_S = 60.0


class RateLimiter:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._calls: dict[str, deque[float]] = {}

    def acquire(self, key: str, per_minute: int) -> float | None:
        """Count one request; None if allowed, else the seconds until one more would be."""
        now = self._clock()
        with self._lock:
            calls = self._calls.setdefault(key, deque())
            while calls and calls[0] <= now - WINDOW_S:
                calls.popleft()
            if len(calls) >= per_minute:
                return calls[0] + WINDOW_S - now
            calls.append(now)
            return None
