"""Applying the Alembic migrations shipped in storage/migrations, from code (serve, `kernelgrade db upgrade`)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from kernelgrade.storage.database import Database

MIGRATIONS_DIR = Path(__file__).parent / "migrations"


def alembic_config(database: Database) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["engine"] = database.engine
    return config


def upgrade(database: Database, revision: str = "head") -> str | None:
    """Bring the schema to `revision`; returns the revision now applied."""
    command.upgrade(alembic_config(database), revision)
    return current_revision(database)


def current_revision(database: Database) -> str | None:
    with database.engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def head_revision() -> str | None:
    return ScriptDirectory(str(MIGRATIONS_DIR)).get_current_head()
