"""The OpenAPI page, health, and the rate limiter's windows."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta

import httpx

from kernelgrade.service.openapi_doc import ERROR_REF
from kernelgrade.service.rate_limit import RateLimiter
from kernelgrade.service.schemas import NAME_PATTERN, VerdictName
from kernelgrade.storage.database import Database
from tests.service.conftest import ApiFactory


def test_openapi_documents_both_submission_bodies_and_the_error_shape(api: httpx.Client) -> None:
    assert api.get("/docs").status_code == 200
    spec = api.get("/openapi.json").json()
    post = spec["paths"]["/v1/submissions"]["post"]
    assert set(post["requestBody"]["content"]) == {"application/json", "multipart/form-data"}
    assert {"404", "409", "413", "422", "429"} <= set(post["responses"])
    assert spec["components"]["schemas"]["SubmissionIn"]["examples"][0]["problem"] == "add_relu"
    assert "/v1/leaderboards/{problem}" in spec["paths"] and "/v1/workers" in spec["paths"]


def test_openapi_matches_behaviour(api_factory: ApiFactory) -> None:
    """What schemathesis relies on (tests/service/test_api_fuzz.py), checked cheaply on every run."""
    spec = api_factory(max_batch=5).get("/openapi.json").json()
    operations = [op for item in spec["paths"].values() for op in item.values()]
    assert "HTTPValidationError" not in spec["components"]["schemas"]
    for operation in operations:  # every error is the one JSON shape, FastAPI's default 422 included
        for status, response in operation["responses"].items():
            if status >= "400":
                assert response["content"]["application/json"]["schema"] == {"$ref": ERROR_REF}, operation
    for path, method in [("/v1/submissions", "post"), ("/v1/submissions/batch", "post"), ("/v1/problems", "post")]:
        assert {"400", "401", "413", "422", "429"} <= set(spec["paths"][path][method]["responses"])
    assert "Retry-After" in spec["paths"]["/v1/submissions"]["get"]["responses"]["429"]["headers"]
    form = spec["paths"]["/v1/submissions"]["post"]["requestBody"]["content"]["multipart/form-data"]
    assert form["schema"]["properties"]["file"]["contentMediaType"] == "text/x-python"
    assert form["schema"]["properties"]["device"]["pattern"] == NAME_PATTERN
    assert spec["components"]["schemas"]["BatchIn"]["properties"]["submissions"]["maxItems"] == 5
    read_one = spec["paths"]["/v1/submissions/{submission_id}"]["get"]
    assert read_one["parameters"][0]["schema"]["maximum"] == 2**31 - 1
    assert read_one["security"] == [{"ApiKey": []}, {"Bearer": []}, {}]  # open mode: a key is optional


def test_a_server_that_needs_keys_documents_them_as_required(api_factory: ApiFactory) -> None:
    spec = api_factory(open_mode="off").get("/openapi.json").json()
    assert spec["paths"]["/v1/submissions"]["get"]["security"] == [{"ApiKey": []}, {"Bearer": []}]
    assert set(spec["components"]["securitySchemes"]) == {"ApiKey", "Bearer"}
    assert "security" not in spec["paths"]["/v1/problems"]["get"]  # public reads


def test_health_reports_the_database_and_mode(api: httpx.Client) -> None:
    health = api.get("/v1/health").json()
    assert health["status"] == "ok" and health["open_mode"] is True and health["workers_online"] == 0
    assert health["database"] in ("sqlite", "postgresql")


def test_the_rate_limiter_counts_in_fixed_windows_of_the_database(database: Database) -> None:
    now = [datetime(2026, 1, 1, 12, 0, 10, tzinfo=UTC)]
    limiter = RateLimiter(database, clock=lambda: now[0])
    assert [limiter.acquire("k", 2) for _ in range(2)] == [None, None]
    assert limiter.acquire("k", 2) == 50.0  # until the minute ends
    assert limiter.acquire("other", 2) is None
    now[0] += timedelta(seconds=49)
    assert limiter.acquire("k", 2) == 1.0
    now[0] += timedelta(seconds=1)
    assert limiter.acquire("k", 2) is None
    assert RateLimiter(database, clock=lambda: now[0]).acquire("k", 2) is None  # another process: same counts
    assert RateLimiter(database, clock=lambda: now[0]).acquire("k", 2) == 60.0


def test_the_api_imports_no_torch() -> None:
    """The API process must start fast and run where torch is not installed (scale-out API containers)."""
    code = "import sys, kernelgrade.service.app; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_the_verdict_names_match_the_evaluator() -> None:
    from typing import get_args

    from kernelgrade.evaluator import Verdict

    assert set(get_args(VerdictName)) == {v.value for v in Verdict}
