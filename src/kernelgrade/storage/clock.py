"""The storage layer's notion of now: aware UTC, so SQLite and Postgres rows compare the same way."""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    return datetime.now(UTC)
