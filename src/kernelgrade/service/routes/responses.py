"""The documented error responses of each route (for the OpenAPI page)."""

from __future__ import annotations

from typing import Any

from kernelgrade.service.schemas import ErrorResponse

_DESCRIPTIONS = {
    401: "no API key, or an unknown or revoked one",
    403: "the key's role may not do this",
    404: "no such problem or submission",
    409: "conflicts with the current state (e.g. a regrade of a job still running)",
    413: "a source or the whole request is too large",
    415: "the body is neither JSON nor multipart/form-data",
    422: "malformed request",
    429: "rate limit or daily quota reached; see Retry-After",
}


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    return {status: {"model": ErrorResponse, "description": _DESCRIPTIONS[status]} for status in statuses}
