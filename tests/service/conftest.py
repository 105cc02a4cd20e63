from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kernelgrade.config import Settings
from kernelgrade.service.app import create_app
from kernelgrade.service.problem_catalog import new_problem
from kernelgrade.storage.database import Database
from kernelgrade.storage.problems import latest_problem, upsert_problem
from kernelgrade.storage.records import ProblemRecord
from tests.service.servers import ThreadServer
from tests.storage.databases import database, database_url

__all__ = ["api", "api_factory", "database", "database_url"]

ApiFactory = Callable[..., httpx.Client]


def base_settings(tmp_path: Path, url: str, **overrides: Any) -> Settings:
    """Settings of a test server: its own data dir and database, no embedded workers, fast protocol, and no
    precompiled headers (each test's fresh cache would build its own, 0.8 GB and a build's time;
    tests/evaluator/test_header_pch.py tests them)."""
    settings = Settings(data_dir=tmp_path, database_url=url, timing_profile="fast", local_judges=0,
                        precompiled_headers=False)
    return settings.replace(**overrides)


def add_builtin(database: Database, name: str = "add_relu") -> None:
    from kernelgrade.problems import find_builtin

    problem = find_builtin(name)
    assert problem is not None
    with database.session() as session:
        upsert_problem(session, new_problem(problem))


def builtin_problem(database: Database, name: str = "add_relu") -> ProblemRecord:
    """The built-in problem `name`, stored and read back."""
    add_builtin(database, name)
    with database.session() as session:
        problem = latest_problem(session, name)
    assert problem is not None
    return problem


@pytest.fixture
def api_factory(database: Database, database_url: str, tmp_path: Path) -> Iterator[ApiFactory]:
    """Start an API server (uvicorn thread, real HTTP) with settings overrides; returns an httpx client."""
    add_builtin(database)
    opened: list[tuple[ThreadServer, httpx.Client]] = []

    def start(**overrides: Any) -> httpx.Client:
        settings = base_settings(tmp_path, database_url, **overrides)
        server = ThreadServer(create_app(settings, database=database)).__enter__()
        client = httpx.Client(base_url=server.url, timeout=30.0)
        opened.append((server, client))
        return client

    yield start
    for server, client in opened:
        client.close()
        server.__exit__(None, None, None)


@pytest.fixture
def api(api_factory: ApiFactory) -> httpx.Client:
    """An open-mode server (bound to loopback) with default limits."""
    return api_factory()
