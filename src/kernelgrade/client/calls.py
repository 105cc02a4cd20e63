"""The API's calls as the client makes them, and their answers read into the API's own schemas; what the
sync and the asyncio client share, apart from sending."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from kernelgrade.client.errors import ApiError
from kernelgrade.service.schemas import (
    DEFAULT_WAIT_S,
    BatchIn,
    BatchOut,
    FinishedOut,
    SubmissionIn,
    SubmissionLimitsOut,
    SubmissionLookupOut,
    SubmissionOut,
)

DEFAULT_URL = "http://127.0.0.1:8000"
# The server answers an ordinary request (a batch of sources, a round of results) in well under a second; one
# that has not answered in 30 s is down or stuck. A wait gets its own length on top.
REQUEST_TIMEOUT_S = 30.0
# A wait's length unless the caller says: the server's own default (well inside the idle limits of proxies),
# which has a loop waiting on slow gradings ask twice a minute.
WAIT_S = DEFAULT_WAIT_S

Answer = TypeVar("Answer", bound=BaseModel)
Item = TypeVar("Item")
QueryValue = int | float


@dataclass(frozen=True)
class Call(Generic[Answer]):
    method: str
    path: str
    answer: type[Answer]
    params: tuple[tuple[str, QueryValue], ...] = ()
    body: bytes | None = None  # JSON
    # How long the server may hold the request before it answers (a wait), on top of the client's timeout.
    held_s: float = 0.0

    @property
    def headers(self) -> dict[str, str]:
        return {"Content-Type": "application/json"} if self.body is not None else {}


LIMITS = Call("GET", "/v1/submissions/limits", SubmissionLimitsOut)


def submit(submission: SubmissionIn) -> Call[SubmissionOut]:
    return Call("POST", "/v1/submissions", SubmissionOut, body=_json(submission))


def submit_batch(submissions: Sequence[SubmissionIn]) -> Call[BatchOut]:
    return Call("POST", "/v1/submissions/batch", BatchOut, body=_json(BatchIn(submissions=list(submissions))))


def get(submission_id: int) -> Call[SubmissionOut]:
    return Call("GET", f"/v1/submissions/{submission_id}", SubmissionOut)


def lookup(ids: Sequence[int]) -> Call[SubmissionLookupOut]:
    return Call("GET", "/v1/submissions/lookup", SubmissionLookupOut, params=tuple(("ids", i) for i in ids))


def wait(ids: Sequence[int], timeout_s: float) -> Call[FinishedOut]:
    params = (*(("ids", i) for i in ids), ("timeout", timeout_s))
    return Call("GET", "/v1/submissions/wait", FinishedOut, params=params, held_s=timeout_s)


def groups(items: Sequence[Item], size: int) -> list[list[Item]]:
    """`items` in consecutive groups of at most `size`."""
    return [list(items[start:start + size]) for start in range(0, len(items), size)]


def joined(answers: Sequence[SubmissionLookupOut]) -> SubmissionLookupOut:
    """The answers of a lookup split over several requests, as one."""
    return SubmissionLookupOut(items=[item for answer in answers for item in answer.items],
                               missing=[i for answer in answers for i in answer.missing])


def read(response: httpx.Response, answer: type[Answer]) -> Answer:
    """The answer as `answer`, or the server's error as an ApiError."""
    if not response.is_success:
        raise error_of(response)
    try:
        return answer.model_validate_json(response.content)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the body"
        raise ApiError("unexpected_response", response.status_code,
                       f"the server's answer is not a {answer.__name__} as this client reads it ({where}:"
                       f" {first['msg']}); use a client of the server's kernelgrade version") from exc


def error_of(response: httpx.Response) -> ApiError:
    try:
        data = response.json()
    except ValueError:
        data = None
    error = data.get("error") if isinstance(data, dict) else None
    retry = response.headers.get("retry-after")
    if not isinstance(error, dict):  # not this API's error shape: a proxy's page, say
        return ApiError("http_error", response.status_code, f"HTTP {response.status_code} from"
                        f" {response.request.url}: {response.text[:200]!r}", _seconds(retry))
    return ApiError(str(error.get("code", "http_error")), response.status_code, str(error.get("message", "")),
                    _seconds(retry))


def rate_limit_pause(error: ApiError) -> float | None:
    """Seconds to wait before sending the request again, for a refusal of the per-minute rate limit only: it
    is refused before the server does anything, so sending it again is safe, and it ends within a minute. A
    used-up daily quota is raised."""
    return error.retry_after if error.code == "rate_limited" and error.retry_after is not None else None


def _json(body: BaseModel) -> bytes:
    return body.model_dump_json(exclude_none=True).encode()


def _seconds(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
