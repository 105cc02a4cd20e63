"""The one place where an EvalResult becomes storage values: typed columns for queries plus the JSON blob."""

from __future__ import annotations

import traceback

from kernelgrade.evaluator import EvalResult, Failure, Stage, Verdict
from kernelgrade.storage.records import EnvironmentFields, JobOutcome

SUMMARY_CHARS = 2000


def outcome_from_result(result: EvalResult) -> JobOutcome:
    env = result.environment
    failure = result.failure
    return JobOutcome(
        verdict=result.verdict.value, result=result.to_json_dict(), speedup=result.speedup,
        reference_median_ms=result.reference_timing.median_ms if result.reference_timing else None,
        candidate_median_ms=result.candidate_timing.median_ms if result.candidate_timing else None,
        error_code=failure.code if failure else None,
        error_summary=failure.message[:SUMMARY_CHARS] if failure else None,
        environment=EnvironmentFields(device_name=env.device_name, driver=env.driver or None, torch=env.torch,
                                      cuda=env.cuda or None, sandbox=env.sandbox, host=env.host) if env else None)


def grader_fault(exc: BaseException, problem_name: str, problem_hash: str) -> JobOutcome:
    """The judge failed outside evaluate() (a stored problem that no longer loads, say): verdict `error`."""
    message = f"the grader failed before grading: {type(exc).__name__}: {exc}"[:SUMMARY_CHARS]
    detail = "".join(traceback.format_exception(exc, limit=10))
    failure = Failure(Stage.VALIDATE, "grader_error", message, detail=detail)
    return outcome_from_result(EvalResult(verdict=Verdict.ERROR, problem=problem_name, problem_hash=problem_hash,
                                          precision="", failure=failure))
