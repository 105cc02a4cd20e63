"""The OpenAPI page, health, and the rate limiter's window."""

from __future__ import annotations

import subprocess
import sys

import httpx

from kernelgrade.service.rate_limit import RateLimiter
from kernelgrade.service.schemas import VerdictName


def test_openapi_documents_both_submission_bodies_and_the_error_shape(api: httpx.Client) -> None:
    assert api.get("/docs").status_code == 200
    spec = api.get("/openapi.json").json()
    post = spec["paths"]["/v1/submissions"]["post"]
    assert set(post["requestBody"]["content"]) == {"application/json", "multipart/form-data"}
    assert {"404", "409", "413", "422", "429"} <= set(post["responses"])
    assert spec["components"]["schemas"]["SubmissionIn"]["examples"][0]["problem"] == "add_relu"
    assert "/v1/leaderboards/{problem}" in spec["paths"] and "/v1/workers" in spec["paths"]


def test_health_reports_the_database_and_mode(api: httpx.Client) -> None:
    health = api.get("/v1/health").json()
    assert health["status"] == "ok" and health["open_mode"] is True and health["workers_online"] == 0
    assert health["database"] in ("sqlite", "postgresql")


def test_rate_limit_window_slides() -> None:
    now = [0.0]
    limiter = RateLimiter(clock=lambda: now[0])
    assert [limiter.acquire("k", 2) for _ in range(2)] == [None, None]
    assert limiter.acquire("k", 2) == 60.0
    assert limiter.acquire("other", 2) is None
    now[0] = 59.0
    assert limiter.acquire("k", 2) == 1.0
    now[0] = 60.5
    assert limiter.acquire("k", 2) is None


def test_the_api_imports_no_torch() -> None:
    """The API process must start fast and run where torch is not installed (scale-out API containers)."""
    code = "import sys, kernelgrade.service.app; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_the_verdict_names_match_the_evaluator() -> None:
    from typing import get_args

    from kernelgrade.evaluator import Verdict

    assert set(get_args(VerdictName)) == {v.value for v in Verdict}
