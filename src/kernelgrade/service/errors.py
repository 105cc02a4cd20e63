"""Every error the API returns has the shape {"error": {"code": ..., "message": ...}}: a stable code for
programs, a message that says what to do for people. Bad input is a 4xx, never a 500."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException as StarletteHTTPException

log = logging.getLogger(__name__)


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str, *, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.headers = dict(headers or {})


def not_found(code: str, message: str) -> ApiError:
    return ApiError(404, code, message)


def conflict(code: str, message: str) -> ApiError:
    return ApiError(409, code, message)


def too_large(code: str, message: str) -> ApiError:
    return ApiError(413, code, message)


def invalid(code: str, message: str) -> ApiError:
    return ApiError(422, code, message)


def too_many(code: str, message: str, retry_after_s: float) -> ApiError:
    seconds = max(1, int(retry_after_s + 0.999))
    return ApiError(429, code, f"{message} Retry after {seconds} s.", headers={"Retry-After": str(seconds)})


def error_response(status: int, code: str, message: str, *, details: Sequence[Any] | None = None,
                   headers: Mapping[str, str] | None = None) -> JSONResponse:
    body: dict[str, Any] = {"code": code, "message": message}
    if details:
        body["details"] = list(details)
    return JSONResponse({"error": body}, status_code=status, headers=dict(headers or {}))


_HTTP_CODES = {400: "invalid_body", 401: "unauthorized", 403: "forbidden", 404: "not_found", 405: "method_not_allowed",
               413: "request_too_large", 415: "unsupported_media_type"}


def install_handlers(app: FastAPI) -> None:
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)


async def _api_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    return error_response(exc.status, exc.code, exc.message, headers=exc.headers)


def _unparseable_json(problem: str) -> JSONResponse:
    return error_response(400, "invalid_json", f"the request body is not valid JSON ({problem}); send a JSON object"
                          " (see /docs for the request schema) with Content-Type: application/json.")


async def _validation_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    # FastAPI reports a body that does not parse as JSON as a validation error; it is a malformed request (400),
    # not a well-formed one with wrong content (422).
    unparsed = next((e for e in exc.errors() if e.get("type") == "json_invalid"), None)
    if unparsed is not None:
        problem = str(unparsed.get("ctx", {}).get("error") or unparsed.get("msg", "malformed"))
        return _unparseable_json(problem)
    details = [{"location": ".".join(str(p) for p in e.get("loc", ())), "problem": str(e.get("msg", ""))}
               for e in exc.errors()]
    first = details[0] if details else {"location": "request", "problem": "malformed"}
    message = f"{first['location']}: {first['problem']}"
    if len(details) > 1:
        message += f" (and {len(details) - 1} more problem(s), see details)"
    return error_response(422, "invalid_request", message + ". See /docs for the request schema.", details=details)


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    code = _HTTP_CODES.get(exc.status_code, "http_error")
    message, headers = str(exc.detail), dict(exc.headers or {})
    if exc.status_code == 400:
        message = (f"the request body could not be read ({exc.detail}); send JSON with Content-Type:"
                   " application/json, or a well-formed multipart/form-data upload.")
    elif exc.status_code == 404:
        message = f"no such endpoint: {request.method} {request.url.path}. The API is listed at /docs."
    elif exc.status_code == 405:
        table: PathMethods = request.app.state.path_methods
        headers["Allow"] = table.allowed(request.url.path, headers.get("Allow", ""))
        message = (f"{request.method} is not allowed on {request.url.path}; it accepts {headers['Allow']}."
                   " The API is listed at /docs.")
    return error_response(exc.status_code, code, message, headers=headers)


@dataclass(frozen=True)
class PathMethods:
    """The methods the API's routes accept, by path. Starlette's own Allow header names only the first route
    that matched the path, so a path served by several routes (GET and POST /v1/problems) would lose the others."""

    routes: tuple[tuple[re.Pattern[str], frozenset[str]], ...]

    @classmethod
    def of(cls, routers: Iterable[APIRouter]) -> PathMethods:
        return cls(tuple((route.path_regex, frozenset(route.methods or ())) for router in routers
                         for route in router.routes if isinstance(route, APIRoute)))

    def allowed(self, path: str, starlette_allow: str) -> str:
        methods = {m.strip() for m in starlette_allow.split(",") if m.strip()}
        for pattern, accepted in self.routes:
            if pattern.match(path):
                methods |= accepted
        return ", ".join(sorted(methods))


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    return error_response(500, "internal_error", "the server failed on this request; this is a bug in kernelgrade,"
                          " not in your request. The server log has the details.")
