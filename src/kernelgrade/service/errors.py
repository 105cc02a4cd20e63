"""Every error the API returns has the shape {"error": {"code": ..., "message": ...}}: a stable code for
programs, a message that says what to do for people. Bad input is a 4xx, never a 500."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
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


_HTTP_CODES = {401: "unauthorized", 403: "forbidden", 404: "not_found", 405: "method_not_allowed",
               413: "request_too_large", 415: "unsupported_media_type"}


def install_handlers(app: FastAPI) -> None:
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)


async def _api_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    return error_response(exc.status, exc.code, exc.message, headers=exc.headers)


async def _validation_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
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
    message = str(exc.detail)
    if exc.status_code == 404:
        message = f"no such endpoint: {request.method} {request.url.path}. The API is listed at /docs."
    elif exc.status_code == 405:
        message = f"{request.method} is not allowed on {request.url.path}. The API is listed at /docs."
    return error_response(exc.status_code, code, message, headers=exc.headers)


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    return error_response(500, "internal_error", "the server failed on this request; this is a bug in kernelgrade,"
                          " not in your request. The server log has the details.")
