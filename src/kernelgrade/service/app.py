"""The FastAPI application factory. Importing this module imports no torch: the embedded worker pool (and
with it the evaluator) is imported when the app starts with workers."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from kernelgrade import __version__
from kernelgrade.config import Settings
from kernelgrade.service.body_limit import BodyLimit, BodyTooLarge, body_too_large_message
from kernelgrade.service.context import ServiceContext
from kernelgrade.service.errors import PathMethods, error_response, install_handlers
from kernelgrade.service.openapi_doc import openapi_builder
from kernelgrade.service.pages.routes import install_pages
from kernelgrade.service.routes import leaderboards, problems, submissions, system
from kernelgrade.storage.database import Database

log = logging.getLogger("kernelgrade.service")

DESCRIPTION = """Grades model-written GPU kernels (KernelBench format): submit a Python file defining `ModelNew`,
poll its status, read leaderboards. Errors are `{"error": {"code": ..., "message": ...}}`.
Authenticate with `X-API-Key: <key>` or `Authorization: Bearer <key>` unless the server runs in open mode."""


def create_app(settings: Settings, *, database: Database | None = None, workers: bool | None = None) -> FastAPI:
    """`workers`: run the embedded worker pool in this process (default: unless settings.local_judges is 0)."""
    context = ServiceContext(settings, database or Database.connect(settings.resolved_database_url))
    if settings.dispatch not in ("local", "celery"):
        raise ValueError(f"unknown dispatch {settings.dispatch!r}; use local or celery (KERNELGRADE_DISPATCH)")
    # With a broker the judges are `kernelgrade worker` processes; an embedded pool would race them.
    embedded = settings.local_judges != 0 and settings.dispatch == "local"
    start_pool = embedded if workers is None else workers
    app = FastAPI(title="kernelgrade", version=__version__, description=DESCRIPTION,
                  lifespan=_lifespan(context, start_pool, owns_database=database is None))
    app.state.context = context
    install_handlers(app)
    app.add_exception_handler(BodyTooLarge, _body_too_large)
    app.add_middleware(BodyLimit, limit=settings.max_request_bytes)
    routers = [module.router for module in (submissions, problems, leaderboards, system)]
    for router in routers:
        app.include_router(router)
    app.state.path_methods = PathMethods.of(routers)
    install_pages(app)
    app.openapi = openapi_builder(app, open_mode=settings.is_open, max_batch=settings.max_batch)  # type: ignore[method-assign]
    return app


def _lifespan(context: ServiceContext, start_pool: bool,
              owns_database: bool) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        announce_mode(context.settings)
        pool = None
        if context.settings.dispatch == "celery":
            from kernelgrade.service.worker.celery_app import CelerySender

            context.sender = CelerySender(context.settings)
        if start_pool:
            from kernelgrade.service.worker.pool import WorkerPool

            pool = await run_in_threadpool(WorkerPool.start, context.settings, context.database)
            context.pool = pool
        try:
            yield
        finally:
            if pool is not None:
                context.pool = None
                await run_in_threadpool(pool.stop)
            if context.sender is not None:
                context.sender.close()
                context.sender = None
            if owns_database:
                context.database.dispose()

    return lifespan


def announce_mode(settings: Settings) -> None:
    if settings.is_open:
        log.warning("open mode: requests without an API key act as the local admin (bound to %s; set"
                    " KERNELGRADE_OPEN_MODE=off to require keys)", settings.host)
    else:
        log.info("API keys required (create one with `kernelgrade keys create --name N --role submitter`)")


async def _body_too_large(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, BodyTooLarge)
    return error_response(413, "request_too_large", body_too_large_message(exc.limit))
