"""Alembic environment: runs online against the engine kernelgrade.storage.migrate passes in."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Engine, text

from kernelgrade.storage.models import Base

# Any constant works; all kernelgrade processes sharing a Postgres database must use the same one so that
# two servers starting together do not both run the same migration.
MIGRATION_LOCK_ID = 7_146_220_001


def run_migrations_online() -> None:
    engine = context.config.attributes.get("engine")
    if not isinstance(engine, Engine):
        raise RuntimeError("run migrations through kernelgrade.storage.migrate (or `kernelgrade db upgrade`)")
    with engine.connect() as connection:
        context.configure(connection=connection, target_metadata=Base.metadata,
                          render_as_batch=connection.dialect.name == "sqlite", compare_type=True)
        with context.begin_transaction():
            if connection.dialect.name == "postgresql":
                connection.execute(text("SELECT pg_advisory_xact_lock(:id)"), {"id": MIGRATION_LOCK_ID})
            context.run_migrations()


run_migrations_online()
