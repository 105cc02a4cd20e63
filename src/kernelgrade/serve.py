"""`kernelgrade serve`: the one place that wires the HTTP app to the judges. It applies the migrations, loads
the built-in problems, picks the dispatch (the embedded pool, or a broker for `kernelgrade worker` processes)
and runs the API."""

from __future__ import annotations

import logging

from fastapi import FastAPI

from kernelgrade.config import Settings
from kernelgrade.logs import configure_logging
from kernelgrade.service.app import create_app
from kernelgrade.service.context import Dispatch
from kernelgrade.service.problem_catalog import upsert_builtins
from kernelgrade.storage.database import Database
from kernelgrade.storage.migrate import upgrade

log = logging.getLogger("kernelgrade.service")


def prepare_database(settings: Settings) -> Database:
    """Connect, apply migrations, and upsert the built-in problems (a changed file becomes a new version)."""
    database = Database.connect(settings.resolved_database_url)
    revision = upgrade(database)
    outcomes = upsert_builtins(database)
    added = sum(1 for o in outcomes if o.created)
    log.info("database %s at revision %s; %d built-in problems (%d new or changed)",
             database.engine.url.render_as_string(hide_password=True), revision, len(outcomes), added)
    return database


def dispatch_for(settings: Settings, database: Database) -> Dispatch | None:
    """The broker with dispatch = celery (an embedded pool would race its workers); else the embedded pool,
    unless local_judges is 0 (an API process only, its judges elsewhere)."""
    # Imported here: the worker side brings torch and the evaluator, which an API-only process never needs.
    from kernelgrade.worker.dispatch import BrokerDispatch, LocalDispatch

    if settings.dispatch == "celery":
        return BrokerDispatch(settings)
    return LocalDispatch(settings, database) if settings.local_judges != 0 else None


def build_app(settings: Settings, database: Database) -> FastAPI:
    return create_app(settings, database=database, dispatch=dispatch_for(settings, database))


def run_server(settings: Settings) -> int:
    import uvicorn

    from kernelgrade.worker.pool import pool_ready

    configure_logging(settings.log_level)
    if settings.local_judges != 0 and settings.dispatch == "local" and not pool_ready(settings):
        return 2
    database = prepare_database(settings)
    app = build_app(settings, database)
    log.info("serving on http://%s:%d (API docs at /docs)", settings.host, settings.port)
    try:
        uvicorn.run(app, host=settings.host, port=settings.port, log_level=settings.log_level.lower(),
                    log_config=None)
    finally:
        database.dispose()
    return 0
