"""Request counters per API key and fixed time window, in the database that every API process of a deployment
already shares (the embedded SQLite file, or the scale-out's Postgres).

One statement counts a request: an INSERT ... ON CONFLICT DO UPDATE ... RETURNING, atomic on both backends
(Postgres locks the row it updates; SQLite runs one writer at a time), so concurrent requests of several
processes each see a distinct count and no increment is lost.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import delete
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from kernelgrade.storage.models import RateCounterRow


@dataclass(frozen=True)
class WindowCount:
    count: int  # requests in the window, this one included
    window_end: datetime


def count_request(session: Session, bucket: str, now: datetime, window: timedelta) -> WindowCount:
    """Count one request of `bucket` in the window that holds `now`."""
    seconds = int(window.total_seconds())
    start = int(now.timestamp()) // seconds * seconds
    values = {"bucket": bucket, "window_start": start, "count": 1}
    insert = postgresql.insert if session.get_bind().dialect.name == "postgresql" else sqlite.insert
    statement = insert(RateCounterRow).values(values)
    upsert = statement.on_conflict_do_update(index_elements=["bucket", "window_start"],
                                             set_={"count": RateCounterRow.count + 1})
    count = session.execute(upsert.returning(RateCounterRow.count)).scalar_one()
    if count == 1:
        # The first request of a window clears what no window can still need.
        prune_windows(session, before=start - seconds)
    return WindowCount(count, datetime.fromtimestamp(start + seconds, UTC))


def prune_windows(session: Session, before: int) -> int:
    """Delete the counters of windows that began before `before` (epoch seconds); returns how many."""
    result = session.execute(delete(RateCounterRow).where(RateCounterRow.window_start < before))
    return int(getattr(result, "rowcount", 0) or 0)
