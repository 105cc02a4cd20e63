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


def trial(index: int, message: str = "", relative: float = 2.1e-7) -> dict[str, Any]:
    """A trial as the judge stores it: the elementwise max_rel_error divides by reference values near zero
    and is far larger than the norm-wise relative errors."""
    return {"index": index, "secret": index > 0, "passed": not message, "message": message, "max_abs_error": 1e-7,
            "max_rel_error": 7.02e12, "rel_error_vs_reference": relative * 0.9, "rel_error_vs_oracle": relative,
            "reference_error_vs_oracle": 8.3e-8}


def correct_result(speedup: float) -> dict[str, Any]:
    return {"verdict": "correct", "speedup": speedup, "failure": None, "findings": [],
            "trials": [trial(i) for i in range(3)],
            "reference_timing": timing(4.0, [3.9, 4.0, 4.1, 4.2]),
            "candidate_timing": timing(4.0 / speedup, [4.0 / speedup] * 3)}


# A failing trial's note as compare.py words it, with a long unbroken run (a mangled name, say) in it.
LONG_NOTE = ("the output: 262144 of 262144 values differ from the float64 result by more than fp32 rounding allows"
             " (largest at index (17, 3, 255, 1023): 0.4471 where float64 gives -1.5e-08, off by 0.447; allowed"
             " there 2.3e-06). Relative error 1, 1.2e+07x PyTorch's own fp32 error (8.3e-08); the limit here is"
             " 1.3e-06. Kernel: _ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEENS_6detail5"
             "ArrayIPcLi1EEEEEviT0_T1_")


def incorrect_result() -> dict[str, Any]:
    message = f"trial 1 (secret seed): {LONG_NOTE}"
    return {"verdict": "incorrect", "findings": [],
            "trials": [trial(0), trial(1, LONG_NOTE, relative=1.0)],
            "failure": {"stage": "correctness", "code": "values", "message": message, "detail": "", "line": None}}


def compile_error_result() -> dict[str, Any]:
    detail = "building ext\nmain.cpp:3:5: error: 'foo' was not declared in this scope\nninja: build stopped"
    return {"verdict": "compile_error", "trials": [], "findings": [],
            "failure": {"stage": "compile", "code": "build_failed", "message": "the extension did not build",
                        "detail": detail, "line": 2}}


def wide_result(speedup: float) -> dict[str, Any]:
    """A correct result whose timing table holds everything a real one can: a reference stopped differently
    before and after the candidate, host-inclusive medians and host-bound reps."""
    result = correct_result(speedup)
    result["reference_timing"] |= {"stop_reason": "target_precision+max_device_time", "host_median_ms": 4.1234,
                                   "host_bound_reps": 12}
    result["candidate_timing"] |= {"stop_reason": "max_reps", "host_median_ms": 1.2345, "host_bound_reps": 3}
    return result


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
