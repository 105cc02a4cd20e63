"""Finished evaluations with full result JSON, recorded through storage as a judge would record them."""

from __future__ import annotations

from typing import Any

from kernelgrade.storage.database import Database
from kernelgrade.storage.jobs import Lease, claim_next, finish_job
from kernelgrade.storage.records import EnvironmentFields, JobOutcome

ENVIRONMENT = EnvironmentFields(device_name="Test CPU", driver=None, torch="2.x", cuda=None, sandbox="bwrap",
                                host="test-host")


def timing(median: float, samples: list[float]) -> dict[str, Any]:
    return {"n": len(samples), "median_ms": median, "mean_ms": median, "std_ms": 0.1, "min_ms": min(samples),
            "max_ms": max(samples), "ci95_low_ms": median * 0.9, "ci95_high_ms": median * 1.1,
            "stop_reason": "target precision", "samples_ms": samples}


def correct_result(speedup: float) -> dict[str, Any]:
    return {"verdict": "correct", "speedup": speedup, "failure": None, "findings": [],
            "trials": [{"index": i, "secret": i > 0, "passed": True, "message": "", "max_abs_error": 1e-7,
                        "max_rel_error": 2e-7} for i in range(3)],
            "reference_timing": timing(4.0, [3.9, 4.0, 4.1, 4.2]),
            "candidate_timing": timing(4.0 / speedup, [4.0 / speedup] * 3)}


def compile_error_result() -> dict[str, Any]:
    detail = "building ext\nmain.cpp:3:5: error: 'foo' was not declared in this scope\nninja: build stopped"
    return {"verdict": "compile_error", "trials": [], "findings": [],
            "failure": {"stage": "compile", "code": "build_failed", "message": "the extension did not build",
                        "detail": detail, "line": 2}}


def finish(database: Database, result: dict[str, Any]) -> None:
    """Claim the oldest queued job and finish it with `result`."""
    timings = (result.get("reference_timing"), result.get("candidate_timing"))
    failure = result.get("failure") or {}
    outcome = JobOutcome(verdict=result["verdict"], result=result, speedup=result.get("speedup"),
                         reference_median_ms=timings[0]["median_ms"] if timings[0] else None,
                         candidate_median_ms=timings[1]["median_ms"] if timings[1] else None,
                         error_code=failure.get("code"), error_summary=failure.get("message"),
                         environment=ENVIRONMENT)
    with database.session() as session:
        job = claim_next(session, Lease("test-judge", 60), {"cpu": "cpu-test"}, 3)
        assert job is not None
        assert finish_job(session, job.evaluation_id, "test-judge", outcome)
