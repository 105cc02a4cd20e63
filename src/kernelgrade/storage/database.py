"""Engines and sessions: one `Database` per process, built from a URL when the service starts.

SQLite (the embedded default) gets WAL mode, so readers never wait on the writer, foreign keys (off by
default in SQLite), and a busy timeout, so that concurrent writers queue instead of failing.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

# A writer holding the SQLite lock finishes within milliseconds; 30 s rides out a burst of submissions or a
# slow disk without surfacing "database is locked" to a client.
SQLITE_BUSY_TIMEOUT_S = 30.0


class Database:
    """An engine and its session factory. `session()` commits on success and rolls back on error."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._sessions = sessionmaker(engine, expire_on_commit=False)

    @classmethod
    def connect(cls, url: str, *, pool_size: int = 10) -> Database:
        return cls(make_engine(url, pool_size=pool_size))

    @property
    def url(self) -> str:
        return self.engine.url.render_as_string(hide_password=False)

    @property
    def is_sqlite(self) -> bool:
        return self.engine.dialect.name == "sqlite"

    @contextmanager
    def session(self) -> Iterator[Session]:
        with self._sessions() as session, session.begin():
            yield session

    def dispose(self) -> None:
        self.engine.dispose()


def make_engine(url: str, *, pool_size: int = 10) -> Engine:
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return create_engine(parsed, pool_size=pool_size, max_overflow=pool_size, pool_pre_ping=True)
    if parsed.database and parsed.database != ":memory:":
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(parsed, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_S, "check_same_thread": False})
    event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    # WAL makes NORMAL durable against application crashes; only an OS crash can lose the last commits.
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()
