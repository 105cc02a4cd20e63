"""Request counters shared by API processes: atomic under concurrency, windowed, pruned; on SQLite and Postgres."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

from sqlalchemy import func, select

from kernelgrade.storage.database import Database
from kernelgrade.storage.models import RateCounterRow
from kernelgrade.storage.rate_limits import count_request

MINUTE = timedelta(minutes=1)
NOON = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def count(database: Database, bucket: str, now: datetime) -> int:
    with database.session() as session:
        return count_request(session, bucket, now, MINUTE).count


def test_requests_count_per_bucket_and_window(database: Database) -> None:
    assert [count(database, "a", NOON + timedelta(seconds=s)) for s in (0, 20, 59)] == [1, 2, 3]
    assert count(database, "b", NOON) == 1
    assert count(database, "a", NOON + MINUTE) == 1  # a new window starts from one
    with database.session() as session:
        counted = count_request(session, "a", NOON + timedelta(seconds=75), MINUTE)
    assert counted.count == 2 and counted.window_end == NOON + 2 * MINUTE


def test_a_new_window_prunes_the_windows_no_one_needs(database: Database) -> None:
    for minutes in range(5):
        count(database, "a", NOON + minutes * MINUTE)
    with database.session() as session:
        starts = sorted(session.scalars(select(RateCounterRow.window_start)))
    assert [datetime.fromtimestamp(s, UTC) for s in starts] == [NOON + 3 * MINUTE, NOON + 4 * MINUTE]


def test_concurrent_requests_each_get_their_own_count(database: Database) -> None:
    """As from several API processes: separate connections, no lost or repeated increment."""
    per_thread, threads = 25, 8

    def burst(_: int) -> list[int]:
        return [count(database, "shared", NOON) for _ in range(per_thread)]

    with ThreadPoolExecutor(threads) as pool:
        seen = [n for counts in pool.map(burst, range(threads)) for n in counts]
    assert sorted(seen) == list(range(1, per_thread * threads + 1))
    with database.session() as session:
        total = session.scalar(select(func.sum(RateCounterRow.count)))
    assert total == per_thread * threads
