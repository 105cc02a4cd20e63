"""A small HTTP client for the kernelgrade API (used by `kernelgrade submit`); imports only httpx and the
API's own schemas, which it reads the answers with."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import httpx
from pydantic import ValidationError

from kernelgrade.service.schemas import SubmissionOut

# A submission is a few hundred KiB at most; a server that does not answer within 30 s is down or stuck.
REQUEST_TIMEOUT_S = 30.0


class ApiClientError(Exception):
    def __init__(self, status: int, code: str, message: str, retry_after: float | None = None) -> None:
        super().__init__(f"{message} ({code}, HTTP {status})")
        self.status, self.code, self.message, self.retry_after = status, code, message, retry_after


@dataclass(frozen=True)
class SubmissionRequest:
    problem: str
    source: str
    model: str = ""
    force: bool = False
    public: bool = False


class ApiClient:
    def __init__(self, base_url: str, api_key: str = "", transport: httpx.BaseTransport | None = None) -> None:
        headers = {"X-API-Key": api_key} if api_key else {}
        self.http = httpx.Client(base_url=base_url, headers=headers, timeout=REQUEST_TIMEOUT_S, transport=transport)

    def close(self) -> None:
        self.http.close()

    def submit(self, request: SubmissionRequest) -> SubmissionOut:
        body = {"problem": request.problem, "source": request.source, "model": request.model,
                "force": request.force, "public": request.public}
        return self._submission(self.http.post("/v1/submissions", json=body))

    def submission(self, submission_id: int) -> SubmissionOut:
        """GET /v1/submissions/{id}, waiting out a rate limit instead of failing."""
        while True:
            try:
                return self._submission(self.http.get(f"/v1/submissions/{submission_id}"))
            except ApiClientError as exc:
                if exc.status != 429 or exc.retry_after is None:
                    raise
                time.sleep(exc.retry_after)

    @classmethod
    def _submission(cls, response: httpx.Response) -> SubmissionOut:
        data = cls._json(response)
        try:
            return SubmissionOut.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise ApiClientError(response.status_code, "unexpected_response",
                                 f"the server's answer is not a submission as this client reads it ({where}:"
                                 f" {first['msg']}); use a client of the server's kernelgrade version") from exc

    @staticmethod
    def _json(response: httpx.Response) -> dict[str, Any]:
        try:
            data = response.json()
        except ValueError:
            data = None
        if response.is_success and isinstance(data, dict):
            return data
        error = data.get("error", {}) if isinstance(data, dict) else {}
        retry = response.headers.get("retry-after")
        raise ApiClientError(response.status_code, str(error.get("code", "http_error")),
                             str(error.get("message", response.text[:200])), float(retry) if retry else None)
