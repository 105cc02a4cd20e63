"""Many submissions' results in one call (GET /v1/submissions/lookup), the wait for the next of them to finish
(GET /v1/submissions/wait), and the limits a client splits its calls by."""

from __future__ import annotations

import threading
import time

import httpx

from kernelgrade.storage.database import Database
from kernelgrade.storage.records import Role
from tests.service.conftest import ApiFactory
from tests.service.keys import make_key
from tests.service.results import full_result, record
from tests.service.sources import variant

# Long enough that a wait that returned at once (not waiting for the judge) is told apart from one that waited.
JUDGE_DELAY_S = 1.5
# A wait's timeout in these tests: far longer than the judge takes, so that returning early means it saw the job.
LONG_WAIT_S = 30


def _submit(api: httpx.Client, index: int, key: str | None = None, **fields: object) -> int:
    headers = {"X-API-Key": key} if key else {}
    created = api.post("/v1/submissions", json={"problem": "add_relu", "source": variant(index), **fields},
                       headers=headers)
    assert created.status_code == 201, created.text
    submission_id: int = created.json()["id"]
    return submission_id


def _judge_later(database: Database, delay_s: float) -> threading.Thread:
    """A judge in another thread (the API's process does not grade here) that records the oldest queued job's
    result in the database after `delay_s`."""
    judge = threading.Thread(target=lambda: (time.sleep(delay_s), record(database, full_result())))
    judge.start()
    return judge


def test_a_lookup_returns_many_in_the_order_asked_and_names_the_unknown(api: httpx.Client,
                                                                        database: Database) -> None:
    ids = [_submit(api, i) for i in range(3)]
    record(database, full_result())  # the first is graded, the others wait
    asked = [ids[2], 999_999, ids[0], ids[2], ids[1]]
    found = api.get("/v1/submissions/lookup", params={"ids": asked})
    assert found.status_code == 200, found.text
    body = found.json()
    assert [item["id"] for item in body["items"]] == [ids[2], ids[0], ids[1]] and body["missing"] == [999_999]
    assert all(item["source"] is None for item in body["items"])
    first = body["items"][1]["evaluation"]
    assert first["status"] == "done" and first["verdict"] == "flagged" and first["speedup"] == 2.0
    one = api.get(f"/v1/submissions/{ids[1]}").json()
    assert body["items"][2] == {**one, "source": None}  # as the one-submission route shows it, queue position too
    assert body["items"][2]["evaluation"]["queue_position"] == 0


def test_a_lookup_shows_full_results_only_to_whom_may_read_them(api_factory: ApiFactory, database: Database) -> None:
    alice, bob = make_key(database, "alice"), make_key(database, "bob")
    admin = make_key(database, "root", Role.ADMIN)
    api = api_factory(open_mode="off")
    private, public = _submit(api, 1, alice), _submit(api, 2, alice, public=True)
    record(database, full_result())
    record(database, full_result())

    def items(key: str) -> list[dict[str, object]]:
        answer = api.get("/v1/submissions/lookup", params={"ids": [private, public]}, headers={"X-API-Key": key})
        assert answer.status_code == 200, answer.text
        found: list[dict[str, object]] = answer.json()["items"]
        return found

    def evaluation(item: dict[str, object]) -> dict[str, object]:
        value = item["evaluation"]
        assert isinstance(value, dict)
        return value

    for key in (alice, admin):
        assert all(evaluation(i)["result"] is not None for i in items(key))
    theirs = items(bob)
    assert evaluation(theirs[0])["result"] is None and evaluation(theirs[1])["result"] is not None  # public
    assert [i["source"] for i in items(alice) + theirs] == [None] * 4  # sources are never in a lookup
    failure = evaluation(theirs[0])["failure"]
    assert isinstance(failure, dict) and failure["code"] == "outputs_precomputed" and failure["detail"] == ""
    assert evaluation(theirs[0])["verdict"] == "flagged"  # results themselves are public
    assert api.get("/v1/submissions/lookup", params={"ids": [private]}).json()["error"]["code"] == "missing_api_key"


def test_more_ids_than_a_call_carries_are_refused_with_what_to_do(api: httpx.Client) -> None:
    limits = api.get("/v1/submissions/limits").json()
    assert limits == {"max_batch": 32, "max_ids": 200, "max_wait_s": 60.0}
    for route in ("lookup", "wait"):
        refused = api.get(f"/v1/submissions/{route}", params={"ids": list(range(1, 202))})
        assert refused.status_code == 422
        error = refused.json()["error"]
        assert error["code"] == "too_many_ids" and "201 ids" in error["message"] and "limit is 200" in error["message"]
        assert "Split them" in error["message"]
    assert api.get("/v1/submissions/lookup", params={"ids": list(range(1, 201))}).json()["items"] == []
    assert api.get("/v1/submissions/lookup").json()["error"]["code"] == "invalid_request"  # ids are required
    assert api.get("/v1/submissions/lookup", params={"ids": 0}).status_code == 422
    assert api.get("/v1/submissions/wait", params={"ids": 1, "timeout": 61}).status_code == 422
    # A single-valued parameter sent twice is refused, not read as its last value.
    twice = api.get("/v1/submissions/wait", params=[("ids", 1), ("timeout", 1), ("timeout", 2)]).json()["error"]
    assert twice == {"code": "invalid_request", "message": "query.timeout: given 2 times; it takes one value. See"
                     " /docs for the request schema."}
    listing = api.get("/v1/submissions", params=[("problem", "add_relu"), ("problem", "x")])
    assert listing.status_code == 422 and "query.problem: given 2 times" in listing.json()["error"]["message"]


def test_a_wait_returns_when_a_judge_elsewhere_finishes_a_job(api: httpx.Client, database: Database) -> None:
    ids = [_submit(api, i) for i in range(2)]
    judge = _judge_later(database, JUDGE_DELAY_S)
    started = time.monotonic()
    answer = api.get("/v1/submissions/wait", params={"ids": ids, "timeout": LONG_WAIT_S}, timeout=LONG_WAIT_S + 10)
    waited = time.monotonic() - started
    judge.join()
    assert answer.status_code == 200, answer.text
    finished = answer.json()["items"]
    assert [item["id"] for item in finished] == [ids[0]] and finished[0]["evaluation"]["status"] == "done"
    assert finished[0]["source"] is None
    assert JUDGE_DELAY_S * 0.9 <= waited < LONG_WAIT_S / 2, waited
    # Already finished: at once, with only those of the ids that are.
    started = time.monotonic()
    again = api.get("/v1/submissions/wait", params={"ids": [ids[1], ids[0]], "timeout": LONG_WAIT_S}).json()
    assert [item["id"] for item in again["items"]] == [ids[0]] and time.monotonic() - started < LONG_WAIT_S / 2


def test_a_wait_ends_empty_at_its_timeout(api: httpx.Client) -> None:
    submission_id = _submit(api, 1)
    started = time.monotonic()
    answer = api.get("/v1/submissions/wait", params={"ids": [submission_id], "timeout": 1.2})
    waited = time.monotonic() - started
    assert answer.status_code == 200 and answer.json() == {"items": []}
    assert 1.2 <= waited < 10, waited
    immediate = api.get("/v1/submissions/wait", params={"ids": [submission_id], "timeout": 0})
    assert immediate.json() == {"items": []}


def test_a_wait_for_an_unknown_submission_is_a_404_naming_it(api: httpx.Client) -> None:
    known = _submit(api, 1)
    started = time.monotonic()
    answer = api.get("/v1/submissions/wait", params={"ids": [known, 999_998, 999_999], "timeout": LONG_WAIT_S})
    assert answer.status_code == 404 and time.monotonic() - started < LONG_WAIT_S / 2
    error = answer.json()["error"]
    assert error["code"] == "submission_not_found" and "no submission 999998, 999999" in error["message"]


def test_the_routes_are_documented_with_their_errors_and_limits(api_factory: ApiFactory) -> None:
    spec = api_factory(max_batch=5).get("/openapi.json").json()
    lookup, wait = spec["paths"]["/v1/submissions/lookup"]["get"], spec["paths"]["/v1/submissions/wait"]["get"]
    assert {"401", "422", "429"} <= set(lookup["responses"]) and {"401", "404", "422", "429"} <= set(wait["responses"])
    ids = {p["name"]: p["schema"] for p in wait["parameters"]}
    assert ids["ids"]["maxItems"] == 200 and ids["ids"]["items"]["maximum"] == 2**31 - 1
    assert ids["timeout"]["maximum"] == 60.0 and ids["timeout"]["minimum"] == 0
    limits = spec["paths"]["/v1/submissions/limits"]["get"]["responses"]["200"]["content"]["application/json"]
    assert limits["schema"] == {"$ref": "#/components/schemas/SubmissionLimitsOut"}
    assert api_factory(max_batch=5).get("/v1/submissions/limits").json()["max_batch"] == 5
