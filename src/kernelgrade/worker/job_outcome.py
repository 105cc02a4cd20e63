"""The one place where the evaluator's values become storage values: an EvalResult's typed columns for
queries plus its JSON blob, a progress report's row, and a torch.compile baseline (both ways)."""

from __future__ import annotations

import logging
import traceback
from datetime import UTC, datetime

import torch

from kernelgrade.evaluator import CompiledBaseline, EvalResult, Failure, Progress, Stage, Verdict
from kernelgrade.storage.records import BaselineRecord, EnvironmentFields, JobOutcome, JobStatus, ProgressUpdate

log = logging.getLogger(__name__)

SUMMARY_CHARS = 2000
# Stages that run the submission; the ones before them build it.
RUNNING_STAGES = {Stage.LOAD, Stage.CORRECTNESS, Stage.TIMING}


def outcome_from_result(result: EvalResult) -> JobOutcome:
    env = result.environment
    failure = result.failure
    return JobOutcome(
        verdict=result.verdict.value, result=result.to_json_dict(), speedup=result.speedup,
        speedup_vs_compiled=result.speedup_vs_compiled,
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


def progress_to_store(progress: Progress) -> tuple[JobStatus, ProgressUpdate]:
    """The job's status and progress row while evaluate() reports `progress`."""
    status = JobStatus.RUNNING if progress.stage in RUNNING_STAGES else JobStatus.COMPILING
    return status, ProgressUpdate(progress.stage.value, progress.message, progress.done, progress.total)


def baseline_to_store(baseline: CompiledBaseline) -> BaselineRecord:
    """A measured (or failed) torch.compile baseline as storage keeps it."""
    return BaselineRecord(torch=baseline.torch or torch.__version__, status=baseline.status.value,
                          median_ms=baseline.median_ms, measured_at=_measured_at(baseline.measured_at),
                          data=baseline.to_json_dict())


def stored_baseline(record: BaselineRecord) -> CompiledBaseline | None:
    """A stored baseline, to reuse; None (measure again) when its JSON no longer reads as a CompiledBaseline."""
    try:
        return CompiledBaseline.from_json_dict(record.data)
    except (TypeError, ValueError, KeyError, AttributeError):
        log.warning("a stored torch.compile baseline (%s) could not be read; measuring again", record.measured_at,
                    exc_info=True)
        return None


def _measured_at(iso: str) -> datetime:
    # Freshness is judged from this time; one that does not parse counts from now rather than never expiring.
    try:
        when = datetime.fromisoformat(iso)
    except ValueError:
        return datetime.now(UTC)
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
