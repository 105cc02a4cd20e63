"""The Python client, sync and asyncio, against a real server whose jobs a judge in another thread records in
the database (the API's process grades nothing here)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time

import httpx
import pytest

from kernelgrade.client import ApiError, AsyncClient, Client, ServerUnreachable, SubmissionIn, SubmissionOut
from kernelgrade.storage.database import Database
from tests.service.conftest import ApiFactory
from tests.service.keys import make_key
from tests.service.results import full_result, record
from tests.service.servers import free_port
from tests.service.sources import variant

# Between one finished job and the next: longer than the server's poll of the database (0.5 s), so that a
# client that follows the jobs as they finish sees the first before the last is done.
JUDGE_SPACING_S = 1.0


class CountingTransport(httpx.HTTPTransport):
    """A real transport that notes the path of every request sent."""

    def __init__(self) -> None:
        super().__init__()
        self.paths: list[str] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.paths.append(request.url.path)
        return super().handle_request(request)


def _submission(index: int, problem: str = "add_relu") -> SubmissionIn:
    return SubmissionIn(problem=problem, source=variant(index), model="loop")


def _url(api: httpx.Client) -> str:
    return str(api.base_url)


def _judge(database: Database, jobs: int, finished_at: list[float]) -> threading.Thread:
    """Records the oldest queued job's result every JUDGE_SPACING_S, `jobs` times, noting when."""

    def run() -> None:
        for _ in range(jobs):
            time.sleep(JUDGE_SPACING_S)
            record(database, full_result())
            finished_at.append(time.monotonic())

    judge = threading.Thread(target=run)
    judge.start()
    return judge


def test_submit_many_sends_batches_of_the_servers_limit_in_order(api_factory: ApiFactory) -> None:
    api = api_factory(max_batch=3)
    transport = CountingTransport()
    wanted = [_submission(i) for i in range(4)] + [_submission(4, "missing")] + [_submission(i) for i in (5, 6, 0)]
    with Client(_url(api), transport=transport) as client:
        items = client.submit_many(wanted)
    assert transport.paths.count("/v1/submissions/batch") == 3 and transport.paths.count("/v1/submissions/limits") == 1
    assert len(items) == 8 and items[4].submission is None
    assert items[4].error is not None and items[4].error.code == "problem_not_found"
    created = [item.submission for item in items if item.submission is not None]
    ids = [s.id for s in created]
    assert ids[:6] == sorted(ids[:6]) and len(set(ids[:6])) == 6
    assert created[6].duplicate is True and created[6].id == created[0].id  # variant 0 again: the earlier one
    assert all(s.model == "loop" and s.evaluation is not None for s in created)


def test_as_completed_yields_each_result_as_its_judge_finishes(api: httpx.Client, database: Database) -> None:
    finished_at: list[float] = []
    with Client(_url(api)) as client:
        ids = [client.submit(_submission(i)).id for i in range(3)]
        judge = _judge(database, 3, finished_at)
        seen: list[tuple[SubmissionOut, float]] = []
        for result in client.as_completed(reversed(ids), timeout_s=120):
            seen.append((result, time.monotonic()))
        judge.join()
        lookup = client.get_many([*ids, 999_999])
    assert sorted(result.id for result, _ in seen) == ids
    assert all(r.evaluation is not None and r.evaluation.verdict == "flagged" for r, _ in seen)
    assert seen[0][1] < finished_at[-1], "the first result came only after the last job was done"
    assert [s.id for s in lookup.items] == ids and lookup.missing == [999_999]
    assert all(s.evaluation is not None and s.evaluation.speedup == 2.0 for s in lookup.items)


def test_the_apis_errors_are_raised_with_their_code(api_factory: ApiFactory, database: Database) -> None:
    with Client(_url(api_factory())) as client:
        with pytest.raises(ApiError) as unknown:
            client.get(999_999)
        assert (unknown.value.code, unknown.value.status) == ("submission_not_found", 404)
        assert "GET /v1/submissions lists them" in unknown.value.message
        with pytest.raises(ApiError, match="no problem named 'missing'") as no_problem:
            client.submit(_submission(1, "missing"))
        assert (no_problem.value.code, no_problem.value.status) == ("problem_not_found", 404)
        with pytest.raises(ApiError) as no_such_wait:
            list(client.as_completed([999_999]))
        assert no_such_wait.value.code == "submission_not_found"
        queued = client.submit(_submission(2)).id
        with pytest.raises(TimeoutError, match=f"1 submission\\(s\\) still being graded after 1 s: {queued}"):
            list(client.as_completed([queued], timeout_s=1))
    keyed = api_factory(open_mode="off")
    with Client(_url(keyed), "kg_not_a_key") as client, pytest.raises(ApiError) as bad_key:
        client.get(queued)
    assert (bad_key.value.code, bad_key.value.status) == ("invalid_api_key", 401)
    key = make_key(database, "hasty", rate=2)
    with Client(_url(keyed), key, wait_on_rate_limit=False) as client:
        client.get(queued)
        client.get(queued)
        with pytest.raises(ApiError) as limited:
            client.get(queued)
    assert (limited.value.code, limited.value.status) == ("rate_limited", 429)
    assert limited.value.retry_after is not None and 1 <= limited.value.retry_after <= 60
    with Client(f"http://127.0.0.1:{free_port()}") as client, pytest.raises(ServerUnreachable, match="cannot reach"):
        client.get(1)


def test_the_async_client_submits_in_batches_and_follows_the_results(api_factory: ApiFactory,
                                                                     database: Database) -> None:
    url = _url(api_factory(max_batch=2))
    finished_at: list[float] = []

    async def loop() -> tuple[list[int], list[int], ApiError]:
        async with AsyncClient(url) as client:
            items = await client.submit_many(_submission(i) for i in range(3))
            ids = [item.submission.id for item in items if item.submission is not None]
            judge = _judge(database, 3, finished_at)
            done = [result.id async for result in client.as_completed(ids, timeout_s=120)]
            await asyncio.to_thread(judge.join)
            try:
                await client.get(999_999)
            except ApiError as exc:
                return ids, done, exc
        raise AssertionError("no error for an unknown submission")

    ids, done, error = asyncio.run(loop())
    assert len(ids) == 3 and sorted(done) == sorted(ids)
    assert (error.code, error.status) == ("submission_not_found", 404)


def test_the_client_imports_no_server_side() -> None:
    """It runs in the caller's program: FastAPI, SQLAlchemy, the worker, the evaluator and torch stay out."""
    code = ("import sys, kernelgrade.client\n"
            "server = [m for m in ('fastapi', 'starlette', 'sqlalchemy', 'torch', 'kernelgrade.worker',"
            " 'kernelgrade.evaluator', 'kernelgrade.storage', 'kernelgrade.config') if m in sys.modules]\n"
            "assert not server, server")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
