"""Every error status of the API, each from a real request to a real server, in the one JSON shape."""

from __future__ import annotations

import base64
from concurrent.futures import ThreadPoolExecutor

import httpx

from kernelgrade.storage.database import Database
from tests.service.conftest import ApiFactory
from tests.service.errors_shape import error_of
from tests.service.keys import make_key
from tests.service.sources import CORRECT


def test_404_for_unknown_problems_submissions_and_routes(api: httpx.Client) -> None:
    message = error_of(api.post("/v1/submissions", json={"problem": "nope", "source": CORRECT}), 404,
                       "problem_not_found")
    assert "GET /v1/problems" in message
    error_of(api.get("/v1/submissions/999999"), 404, "submission_not_found")
    error_of(api.get("/v1/problems/nope"), 404, "problem_not_found")
    error_of(api.get("/v1/leaderboards/nope"), 404, "problem_not_found")
    error_of(api.get("/v1/no-such-thing"), 404, "not_found")
    error_of(api.get("/v1/submissions/abc"), 404, "not_found")  # ids are numbers; no route takes a word


def test_405_names_every_method_of_the_path_in_allow(api: httpx.Client) -> None:
    for method, path, allow in [("DELETE", "/v1/problems", "GET, POST"), ("OPTIONS", "/v1/submissions", "GET, POST"),
                                ("GET", "/v1/submissions/batch", "POST"), ("PUT", "/v1/submissions/7", "GET")]:
        response = api.request(method, path)
        message = error_of(response, 405, "method_not_allowed")
        assert response.headers["Allow"] == allow and allow in message


def test_400_for_bodies_that_do_not_parse(api: httpx.Client) -> None:
    json_header = {"Content-Type": "application/json"}
    for path in ("/v1/submissions", "/v1/submissions/batch", "/v1/problems"):
        message = error_of(api.post(path, content=b'{"problem": "add_relu", "source": ', headers=json_header), 400,
                           "invalid_json")
        assert "not valid JSON" in message
    error_of(api.post("/v1/problems", content=b"\xff", headers=json_header), 400, "invalid_body")
    broken_form = {"Content-Type": "multipart/form-data"}  # no boundary
    error_of(api.post("/v1/submissions", content=b"--x\r\n", headers=broken_form), 400, "invalid_body")


def test_ids_beyond_the_id_columns_are_refused_not_a_server_error(api: httpx.Client) -> None:
    error_of(api.get(f"/v1/submissions/{2**64 + 5}"), 422, "invalid_request")
    error_of(api.get(f"/v1/submissions/{2**31}"), 422, "invalid_request")
    error_of(api.get("/v1/submissions/0"), 422, "invalid_request")
    error_of(api.get(f"/v1/submissions/{2**31 - 1}"), 404, "submission_not_found")
    huge_cursor = base64.urlsafe_b64encode(f"s:{2**70}".encode()).decode().rstrip("=")
    error_of(api.get("/v1/submissions", params={"cursor": huge_cursor}), 422, "invalid_cursor")
    problem = {"name": "p", "source": "x = 1\n", "level": 2**70}
    error_of(api.post("/v1/problems", json=problem), 422, "invalid_request")


def test_409_when_forcing_a_regrade_of_a_job_still_queued(api: httpx.Client) -> None:
    first = api.post("/v1/submissions", json={"problem": "add_relu", "source": CORRECT})
    assert first.status_code == 201
    message = error_of(api.post("/v1/submissions", json={"problem": "add_relu", "source": CORRECT, "force": True}),
                       409, "evaluation_in_progress")
    assert f"/v1/submissions/{first.json()['id']}" in message


def test_413_for_an_oversized_source_and_an_oversized_body(api_factory: ApiFactory) -> None:
    api = api_factory(max_source_bytes=2000, max_request_bytes=20_000)
    big = CORRECT + "#" * 3000
    message = error_of(api.post("/v1/submissions", json={"problem": "add_relu", "source": big}), 413,
                       "source_too_large")
    assert "2000" in message
    upload = api.post("/v1/submissions", data={"problem": "add_relu"}, files={"file": ("s.py", big.encode())})
    error_of(upload, 413, "source_too_large")
    error_of(api.post("/v1/submissions", json={"problem": "add_relu", "source": "#" * 30_000}), 413,
             "request_too_large")
    streamed = api.post("/v1/submissions", content=(b"#" * 10_000 for _ in range(3)),
                        headers={"Content-Type": "application/json"})
    error_of(streamed, 413, "request_too_large")


def test_422_for_malformed_requests(api: httpx.Client) -> None:
    cases = [
        api.post("/v1/submissions", json={"source": CORRECT}),
        api.post("/v1/submissions", json={"problem": "add_relu", "source": CORRECT, "force": [1]}),
        api.post("/v1/submissions", json={"problem": "add_relu", "source": CORRECT, "colour": "red"}),
        api.post("/v1/submissions", json={"problem": "add_relu", "source": CORRECT, "force": 0}),  # not coerced
        api.post("/v1/submissions", data={"problem": "add_relu", "force": "maybe"}, files={"file": ("s.py", b"x")}),
        api.post("/v1/submissions/batch", json={"submissions": []}),
        api.post("/v1/problems", json={"name": "p", "source": "x = 1\n", "level": "2"}),
        api.get("/v1/submissions", params={"verdict": "great"}),
        api.get("/v1/submissions", params={"limit": 0}),
    ]
    for response in cases:
        error_of(response, 422, "invalid_request")
    missing = api.post("/v1/submissions", json={"source": CORRECT}).json()["error"]
    assert missing["message"].startswith("body.problem") and missing["details"][0]["location"] == "body.problem"
    error_of(api.get("/v1/submissions", params={"cursor": "not-a-cursor"}), 422, "invalid_cursor")
    error_of(api.post("/v1/submissions", json={"problem": "add_relu", "source": CORRECT, "device": "cuda"}), 422,
             "device_mismatch")
    error_of(api.post("/v1/problems", json={"name": "p", "source": "x = 1\n"}), 422, "invalid_problem")
    error_of(api.post("/v1/submissions", data={"problem": "add_relu"}, files={"file": ("s.py", b"\xff\xfe")}), 422,
             "source_not_text")


def test_429_with_retry_after_for_the_rate_limit(api_factory: ApiFactory, database: Database) -> None:
    key = make_key(database, "alice", rate=3)
    api = api_factory(open_mode="off")
    headers = {"X-API-Key": key}
    for _ in range(3):
        assert api.get("/v1/submissions", headers=headers).status_code == 200
    limited = api.get("/v1/submissions", headers=headers)
    message = error_of(limited, 429, "rate_limited")
    assert 1 <= int(limited.headers["Retry-After"]) <= 60 and "Retry after" in message


def test_429_with_retry_after_for_the_daily_quota(api_factory: ApiFactory, database: Database) -> None:
    key = make_key(database, "bob", quota=2)
    api = api_factory(open_mode="off")
    headers = {"Authorization": f"Bearer {key}"}
    for i in range(2):
        body = {"problem": "add_relu", "source": CORRECT + f"# {i}\n"}
        assert api.post("/v1/submissions", json=body, headers=headers).status_code == 201
    over = api.post("/v1/submissions", json={"problem": "add_relu", "source": CORRECT + "# 3\n"}, headers=headers)
    error_of(over, 429, "quota_exceeded")
    assert 86_000 < int(over.headers["Retry-After"]) <= 86_400
    batch = api.post("/v1/submissions/batch", json={"submissions": [{"problem": "add_relu", "source": CORRECT}]},
                     headers=headers)
    error_of(batch, 429, "quota_exceeded")


def test_401_403_and_415(api_factory: ApiFactory, database: Database) -> None:
    submitter = make_key(database, "carol")
    api = api_factory(open_mode="off")
    error_of(api.get("/v1/submissions"), 401, "missing_api_key")
    error_of(api.get("/v1/submissions", headers={"X-API-Key": "kg_wrong-key-000000"}), 401, "invalid_api_key")
    problem = {"name": "p", "source": "x = 1\n"}
    error_of(api.post("/v1/problems", json=problem, headers={"X-API-Key": submitter}), 403, "forbidden")
    error_of(api.post("/v1/submissions", content=b"hello", headers={"X-API-Key": submitter,
                                                                    "Content-Type": "text/plain"}),
             415, "unsupported_media_type")
    assert api.get("/v1/problems").status_code == 200  # public reads need no key


def test_the_daily_quota_holds_under_concurrent_submissions(api_factory: ApiFactory, database: Database) -> None:
    """Each check and its insert are one step: concurrent requests cannot all take the last free slot."""
    key = make_key(database, "dave", quota=3)
    api = api_factory(open_mode="off")

    def post(i: int) -> int:
        body = {"problem": "add_relu", "source": CORRECT + f"# {i}\n"}
        return api.post("/v1/submissions", json=body, headers={"X-API-Key": key}).status_code

    with ThreadPoolExecutor(8) as pool:
        statuses = sorted(pool.map(post, range(8)))
    assert statuses == [201] * 3 + [429] * 5
