"""Database fixtures for storage and service tests: every test runs on a fresh SQLite file and on a fresh
schema of the real Postgres at 127.0.0.1:5432 (skipped, with the reason, where that server is not running)."""

from __future__ import annotations

import functools
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from kernelgrade.storage.database import Database
from kernelgrade.storage.migrate import upgrade

# The test database of the CI machine; trust auth, so no password.
POSTGRES_URL = os.environ.get("KERNELGRADE_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
BACKENDS = ("sqlite", "postgres")


@functools.cache
def postgres_unavailable() -> str | None:
    try:
        with psycopg.connect(_libpq(POSTGRES_URL), connect_timeout=3):
            return None
    except psycopg.Error as exc:
        return f"no Postgres at {POSTGRES_URL}: {str(exc).strip()[:200]}"


def _libpq(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://")


def _schema_command(command: str, schema: str) -> None:
    with psycopg.connect(_libpq(POSTGRES_URL), autocommit=True) as connection:
        connection.execute(sql.SQL(command).format(sql.Identifier(schema)))


@contextmanager
def fresh_database_url(backend: str, folder: Path) -> Iterator[str]:
    """A URL of an empty database: a new SQLite file, or a new Postgres schema (dropped afterwards)."""
    if backend == "sqlite":
        yield f"sqlite:///{folder / 'kernelgrade.db'}"
        return
    reason = postgres_unavailable()
    if reason:
        pytest.skip(reason)
    schema = f"kg_test_{uuid.uuid4().hex[:12]}"
    _schema_command("CREATE SCHEMA {}", schema)
    try:
        separator = "&" if "?" in POSTGRES_URL else "?"
        yield f"{POSTGRES_URL}{separator}options=-csearch_path%3D{schema}"
    finally:
        _schema_command("DROP SCHEMA {} CASCADE", schema)


@pytest.fixture(params=BACKENDS)
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with fresh_database_url(request.param, tmp_path) as url:
        yield url


@pytest.fixture
def database(database_url: str) -> Iterator[Database]:
    db = Database.connect(database_url)
    upgrade(db)
    yield db
    db.dispose()
