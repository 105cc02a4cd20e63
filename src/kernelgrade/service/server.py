"""`kernelgrade serve`: migrations, the built-in problems, then the API and the embedded pool in one process."""

from __future__ import annotations

import logging

from kernelgrade.config import Settings
from kernelgrade.storage.database import Database

log = logging.getLogger("kernelgrade.service")


def configure_logging(level: str) -> None:
    logging.basicConfig(level=level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # Alembic announces each of its plugins at INFO; the migrations it runs are still logged.
    logging.getLogger("alembic.runtime.plugins").setLevel(logging.WARNING)


def prepare_database(settings: Settings) -> Database:
    """Connect, apply migrations, and upsert the built-in problems (a changed file becomes a new version)."""
    from kernelgrade.service.problem_catalog import upsert_builtins
    from kernelgrade.storage.migrate import upgrade

    database = Database.connect(settings.resolved_database_url)
    revision = upgrade(database)
    outcomes = upsert_builtins(database)
    added = sum(1 for o in outcomes if o.created)
    log.info("database %s at revision %s; %d built-in problems (%d new or changed)",
             database.engine.url.render_as_string(hide_password=True), revision, len(outcomes), added)
    return database


def pool_ready(settings: Settings) -> bool:
    """Refuse to start (with the reason) where the judges could not isolate submissions as required, or
    the settings name an unknown grading profile."""
    from kernelgrade.evaluator.sandbox.levels import SandboxUnavailable
    from kernelgrade.service.worker.grading_request import RequestBuilder
    from kernelgrade.service.worker.pool import pool_launcher

    try:
        RequestBuilder(settings)
        pool_launcher(settings)
    except SandboxUnavailable as exc:
        log.error("refusing to start the worker pool: %s", exc)
        return False
    except ValueError as exc:
        log.error("cannot start the worker pool: %s", exc)
        return False
    return True


def run_server(settings: Settings) -> int:
    import uvicorn

    from kernelgrade.service.app import create_app

    configure_logging(settings.log_level)
    if settings.local_judges != 0 and not pool_ready(settings):
        return 2
    database = prepare_database(settings)
    app = create_app(settings, database=database)
    log.info("serving on http://%s:%d (API docs at /docs)", settings.host, settings.port)
    try:
        uvicorn.run(app, host=settings.host, port=settings.port, log_level=settings.log_level.lower(),
                    log_config=None)
    finally:
        database.dispose()
    return 0
