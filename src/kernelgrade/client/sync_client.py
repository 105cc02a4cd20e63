"""`Client`: the API from ordinary (blocking) code."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from types import TracebackType

import httpx

from kernelgrade.client import calls
from kernelgrade.client.calls import DEFAULT_URL, REQUEST_TIMEOUT_S, WAIT_S, Answer, Call
from kernelgrade.client.errors import ApiError, ServerUnreachable
from kernelgrade.client.pending import Pending
from kernelgrade.service.schemas import (
    BatchItemOut,
    SubmissionIn,
    SubmissionLimitsOut,
    SubmissionLookupOut,
    SubmissionOut,
)


class Client:
    """The kernelgrade API over HTTP. Errors the server answers are raised as ApiError, no answer as
    ServerUnreachable; a request refused by the per-minute rate limit is sent again after the Retry-After the
    server names, unless `wait_on_rate_limit` is off."""

    def __init__(self, base_url: str = DEFAULT_URL, api_key: str = "", *, timeout_s: float = REQUEST_TIMEOUT_S,
                 wait_on_rate_limit: bool = True, transport: httpx.BaseTransport | None = None) -> None:
        headers = {"X-API-Key": api_key} if api_key else {}
        self.base_url = base_url.rstrip("/")
        self.timeout_s, self.wait_on_rate_limit = timeout_s, wait_on_rate_limit
        self.http = httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout_s, transport=transport)
        self._limits: SubmissionLimitsOut | None = None

    def __enter__(self) -> Client:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    def limits(self) -> SubmissionLimitsOut:
        """The server's limits per request (asked once)."""
        if self._limits is None:
            self._limits = self._send(calls.LIMITS)
        return self._limits

    def submit(self, submission: SubmissionIn) -> SubmissionOut:
        """Queue one submission (or get the earlier identical one back: `duplicate`)."""
        return self._send(calls.submit(submission))

    def submit_many(self, submissions: Iterable[SubmissionIn]) -> list[BatchItemOut]:
        """Queue several, in batches of the server's limit; each item has its submission or its error, in order."""
        items: list[BatchItemOut] = []
        for batch in calls.groups(list(submissions), self.limits().max_batch):
            items += self._send(calls.submit_batch(batch)).items
        return items

    def get(self, submission_id: int) -> SubmissionOut:
        """One submission, its source included where the key may read it."""
        return self._send(calls.get(submission_id))

    def get_many(self, ids: Iterable[int]) -> SubmissionLookupOut:
        """Several submissions without their sources, in order; ids that name none are in `missing`."""
        groups = calls.groups(list(dict.fromkeys(ids)), self.limits().max_ids)
        return calls.joined([self._send(calls.lookup(group)) for group in groups])

    def wait(self, ids: Iterable[int], timeout_s: float = WAIT_S) -> list[SubmissionOut]:
        """Those of `ids` (at most the server's max_ids) that are graded, as soon as one is; [] after `timeout_s`."""
        return self._send(calls.wait(list(ids), timeout_s)).items

    def as_completed(self, ids: Iterable[int], timeout_s: float | None = None) -> Iterator[SubmissionOut]:
        """Each submission once its grading is done, in the order they finish. TimeoutError once `timeout_s`
        has passed with some still being graded; ApiError (submission_not_found) for an id that names none."""
        pending = Pending(ids, self.limits(), timeout_s)
        while pending:
            group, wait_s = pending.next_wait()
            yield from pending.finished(self.wait(group, wait_s))

    def _send(self, call: Call[Answer]) -> Answer:
        while True:
            try:
                response = self.http.request(call.method, call.path, params=call.params, content=call.body,
                                             headers=call.headers, timeout=self.timeout_s + call.held_s)
            except httpx.TransportError as exc:
                raise ServerUnreachable(self.base_url, exc) from exc
            try:
                return calls.read(response, call.answer)
            except ApiError as error:
                pause = calls.rate_limit_pause(error) if self.wait_on_rate_limit else None
                if pause is None:
                    raise
                time.sleep(pause)
