"""`AsyncClient`: the API from asyncio code, the same calls as `Client`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
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


class AsyncClient:
    """As `Client` (kernelgrade.client.Client), with every call awaited and `as_completed` an async iterator."""

    def __init__(self, base_url: str = DEFAULT_URL, api_key: str = "", *, timeout_s: float = REQUEST_TIMEOUT_S,
                 wait_on_rate_limit: bool = True, transport: httpx.AsyncBaseTransport | None = None) -> None:
        headers = {"X-API-Key": api_key} if api_key else {}
        self.base_url = base_url.rstrip("/")
        self.timeout_s, self.wait_on_rate_limit = timeout_s, wait_on_rate_limit
        self.http = httpx.AsyncClient(base_url=self.base_url, headers=headers, timeout=timeout_s,
                                      transport=transport)
        self._limits: SubmissionLimitsOut | None = None

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        traceback: TracebackType | None) -> None:
        await self.close()

    async def close(self) -> None:
        await self.http.aclose()

    async def limits(self) -> SubmissionLimitsOut:
        if self._limits is None:
            self._limits = await self._send(calls.LIMITS)
        return self._limits

    async def submit(self, submission: SubmissionIn) -> SubmissionOut:
        return await self._send(calls.submit(submission))

    async def submit_many(self, submissions: Iterable[SubmissionIn]) -> list[BatchItemOut]:
        items: list[BatchItemOut] = []
        for batch in calls.groups(list(submissions), (await self.limits()).max_batch):
            items += (await self._send(calls.submit_batch(batch))).items
        return items

    async def get(self, submission_id: int) -> SubmissionOut:
        return await self._send(calls.get(submission_id))

    async def get_many(self, ids: Iterable[int]) -> SubmissionLookupOut:
        groups = calls.groups(list(dict.fromkeys(ids)), (await self.limits()).max_ids)
        return calls.joined([await self._send(calls.lookup(group)) for group in groups])

    async def wait(self, ids: Iterable[int], timeout_s: float = WAIT_S) -> list[SubmissionOut]:
        return (await self._send(calls.wait(list(ids), timeout_s))).items

    async def as_completed(self, ids: Iterable[int], timeout_s: float | None = None) -> AsyncIterator[SubmissionOut]:
        pending = Pending(ids, await self.limits(), timeout_s)
        while pending:
            group, wait_s = pending.next_wait()
            for finished in pending.finished(await self.wait(group, wait_s)):
                yield finished

    async def _send(self, call: Call[Answer]) -> Answer:
        while True:
            try:
                response = await self.http.request(call.method, call.path, params=call.params, content=call.body,
                                                   headers=call.headers, timeout=self.timeout_s + call.held_s)
            except httpx.TransportError as exc:
                raise ServerUnreachable(self.base_url, exc) from exc
            try:
                return calls.read(response, call.answer)
            except ApiError as error:
                pause = calls.rate_limit_pause(error) if self.wait_on_rate_limit else None
                if pause is None:
                    raise
                await asyncio.sleep(pause)
