"""The FastAPI application factory. It imports no torch and no worker: whoever creates the app passes the
dispatch that carries queued jobs to judges (kernelgrade/serve.py)."""

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
from kernelgrade.service.context import Dispatch, ServiceContext
from kernelgrade.service.errors import PathMethods, error_response, install_handlers
from kernelgrade.service.openapi_doc import openapi_builder
from kernelgrade.service.pages.routes import install_pages
from kernelgrade.service.routes import leaderboards, problems, submissions, system
from kernelgrade.storage.database import Database

log = logging.getLogger("kernelgrade.service")

DESCRIPTION = """Grades model-written GPU kernels (KernelBench format): submit a Python file defining `ModelNew`,
poll its status, read leaderboards. Errors are `{"error": {"code": ..., "message": ...}}`.
Authenticate with `X-API-Key: <key>` or `Authorization: Bearer <key>` unless the server runs in open mode."""


def create_app(settings: Settings, *, database: Database | None = None, dispatch: Dispatch | None = None) -> FastAPI:
    """`dispatch` starts and stops with the app; without one, queued jobs wait in the database."""
    context = ServiceContext(settings, database or Database.connect(settings.resolved_database_url))
    app = FastAPI(title="kernelgrade", version=__version__, description=DESCRIPTION,
                  lifespan=_lifespan(context, dispatch, owns_database=database is None))
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


def _lifespan(context: ServiceContext, dispatch: Dispatch | None,
              owns_database: bool) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        announce_mode(context.settings)
        if dispatch is not None:
            await run_in_threadpool(dispatch.start)
            context.dispatch = dispatch
        try:
            yield
        finally:
            if dispatch is not None:
                context.dispatch = None
                await run_in_threadpool(dispatch.stop)
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
