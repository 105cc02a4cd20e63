"""The documented error responses of each route (for the OpenAPI page). Every status a route can answer is
listed with the error schema, so that the document and the behaviour agree (tests/service/test_api_fuzz.py)."""

from __future__ import annotations

from typing import Any

from kernelgrade.service.schemas import ErrorResponse

_DESCRIPTIONS = {
    400: "the body could not be parsed (not JSON, not UTF-8, or a malformed multipart form)",
    401: "no API key, or an unknown or revoked one",
    403: "the key's role may not do this",
    404: "no such problem or submission",
    409: "conflicts with the current state (e.g. a regrade of a job still running)",
    413: "a source or the whole request is too large",
    415: "the body is neither JSON nor multipart/form-data",
    422: "malformed request",
    429: "rate limit or daily quota reached; see Retry-After",
    503: "the database does not answer",
}
_HEADERS: dict[int, dict[str, Any]] = {
    429: {"Retry-After": {"description": "seconds until the request would be accepted",
                          "schema": {"type": "integer", "minimum": 1}}},
}

# A route that takes an API key answers 401 for a bad one and 429 once the key's rate limit is used up.
KEYED = (401, 429)
# A route that reads a body answers 400 when it does not parse, 413 when it is too large.
WITH_BODY = (400, 413, 422)


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    return {status: _response(status) for status in sorted(set(statuses))}


def _response(status: int) -> dict[str, Any]:
    described: dict[str, Any] = {"model": ErrorResponse, "description": _DESCRIPTIONS[status]}
    if status in _HEADERS:
        described["headers"] = _HEADERS[status]
    return described
