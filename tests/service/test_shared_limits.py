"""Rate limits and quotas hold for a deployment, not per process: two `kernelgrade serve` API processes on one
database (a SQLite file, or Postgres as in scale-out), hit alternately, refuse once the key's shared allowance
is used up."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from kernelgrade.storage.database import Database
from tests.service.errors_shape import error_of
from tests.service.keys import make_key
from tests.service.servers import ServeProcess
from tests.service.sources import CORRECT
from tests.storage.databases import BACKENDS, fresh_database_url

RATE = 6
QUOTA = 3
# API processes only (no judges): the test is about counting requests, not grading them.
SETTINGS = {"KERNELGRADE_LOCAL_JUDGES": "0", "KERNELGRADE_OPEN_MODE": "off"}
# The burst of RATE + 1 requests takes well under a second; starting it this far from a minute's end keeps it
# inside one window of the limiter, so that the expected refusal does not move to the next window.
WINDOW_MARGIN_S = 10


@pytest.fixture(params=BACKENDS)
def two_servers(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[ServeProcess, ServeProcess, str]]:
    with fresh_database_url(request.param, tmp_path) as url:
        settings = {**SETTINGS, "KERNELGRADE_DATABASE_URL": url}
        first, second = ServeProcess(tmp_path, settings), ServeProcess(tmp_path, settings)
        try:
            first.start()  # applies the migrations; the second finds them applied
            second.start()
            database = Database.connect(url)
            try:
                yield first, second, make_key(database, "erin", rate=RATE, quota=QUOTA)
            finally:
                database.dispose()
        finally:
            second.stop()
            first.stop()


def test_the_rate_limit_is_shared_by_two_api_processes(two_servers: tuple[ServeProcess, ServeProcess, str]) -> None:
    first, second, key = two_servers
    headers = {"X-API-Key": key}
    wait_for_a_fresh_window_margin()
    statuses = [httpx.get(f"{server.url}/v1/submissions", headers=headers, timeout=30.0).status_code
                for server in [first, second] * (RATE // 2)]
    assert statuses == [200] * RATE  # alternately: 3 on each, 6 in all
    for server in (first, second):
        limited = httpx.get(f"{server.url}/v1/submissions", headers=headers, timeout=30.0)
        error_of(limited, 429, "rate_limited")
        assert 1 <= int(limited.headers["Retry-After"]) <= 60


def test_the_daily_quota_is_shared_by_two_api_processes(two_servers: tuple[ServeProcess, ServeProcess, str]) -> None:
    first, second, key = two_servers
    headers = {"X-API-Key": key}
    statuses = []
    for i, server in enumerate([first, second, first, second]):
        body = {"problem": "add_relu", "source": CORRECT + f"# {i}\n"}
        response = httpx.post(f"{server.url}/v1/submissions", json=body, headers=headers, timeout=30.0)
        statuses.append(response.status_code)
        if response.status_code == 429:
            assert error_of(response, 429, "quota_exceeded") and int(response.headers["Retry-After"]) > 86_000
    assert statuses == [201] * QUOTA + [429]


def wait_for_a_fresh_window_margin() -> None:
    second_of_minute = datetime.now(UTC).second
    if second_of_minute > 60 - WINDOW_MARGIN_S:
        time.sleep(60 - second_of_minute + 0.5)
