"""Records from storage turned into response bodies, applying who may see what: sources and full results
only for their submitter, admins and the open-mode local user (or everyone, for a public submission)."""

from __future__ import annotations

from typing import Any, cast

from kernelgrade.sandbox_policy import UNSANDBOXED_WARNING, unsandboxed
from kernelgrade.service.auth import Principal
from kernelgrade.service.schemas import (
    CompiledBaselineOut,
    EnvironmentOut,
    EvaluationOut,
    FailureOut,
    FindingOut,
    ProblemOut,
    ProblemSummaryOut,
    ProgressOut,
    SubmissionOut,
    TimingOut,
    VerdictName,
)
from kernelgrade.storage.records import EvaluationRecord, ProblemRecord, SubmissionView


def submission_out(view: SubmissionView, principal: Principal, *, with_source: bool = True,
                   duplicate: bool = False, warnings: list[str] | None = None) -> SubmissionOut:
    submission = view.submission
    owner_view = principal.may_read_source(submission)
    evaluation = view.evaluation
    return SubmissionOut(
        id=submission.id, problem=submission.problem_name, problem_version=submission.problem_hash,
        submitter=submission.submitter, model=submission.model, public=submission.public,
        source_hash=submission.source_hash, created_at=submission.created_at,
        source=submission.source if with_source and owner_view else None,
        evaluation=evaluation_out(evaluation, view.queue_position, full=owner_view) if evaluation else None,
        duplicate=duplicate, warnings=warnings or [])


def evaluation_out(record: EvaluationRecord, queue_position: int | None, *, full: bool) -> EvaluationOut:
    result = record.result or {}
    env = record.environment
    return EvaluationOut(
        id=record.id, status=record.status.value, verdict=cast(VerdictName | None, record.verdict),
        requested_device=record.requested_device, device_class=record.device_class, attempts=record.attempts,
        speedup=record.speedup, speedup_vs_compiled=record.speedup_vs_compiled,
        reference_median_ms=record.reference_median_ms, candidate_median_ms=record.candidate_median_ms,
        compiled_baseline=_compiled_baseline(result),
        reference_timing=_timing(result.get("reference_timing")),
        candidate_timing=_timing(result.get("candidate_timing")), timing_method=_timing_method(result.get("method")),
        failure=_failure(record, result, full),
        findings=[FindingOut.model_validate(f) for f in result.get("findings", [])],
        environment=EnvironmentOut(device_name=env.device_name, driver=env.driver, torch=env.torch, cuda=env.cuda,
                                   sandbox=env.sandbox, host=env.host,
                                   warning=UNSANDBOXED_WARNING if unsandboxed(env.sandbox) else None) if env else None,
        progress=ProgressOut(stage=record.progress.stage, message=record.progress.message, done=record.progress.done,
                             total=record.progress.total) if record.progress else None,
        queue_position=queue_position, last_error=record.last_error, created_at=record.created_at,
        started_at=record.started_at, finished_at=record.finished_at, result=record.result if full else None)


def _timing(data: Any) -> TimingOut | None:
    return TimingOut.model_validate(data) if isinstance(data, dict) else None


def _timing_method(data: Any) -> str | None:
    if not isinstance(data, dict):
        return None
    flush = int(data.get("flush_bytes", 0)) // (1024 * 1024)
    return f"{data.get('clock', '?')}; {flush} MiB cache flush per rep; {data.get('precision_flags', '?')}"


def _compiled_baseline(result: dict[str, Any]) -> CompiledBaselineOut | None:
    data = result.get("compiled_baseline")
    if not isinstance(data, dict):
        return None
    timing = data.get("timing")
    median = timing.get("median_ms") if isinstance(timing, dict) else None
    return CompiledBaselineOut.model_validate(
        {**data, "median_ms": median, "reused": bool(result.get("compiled_baseline_reused"))})


def _failure(record: EvaluationRecord, result: dict[str, Any], full: bool) -> FailureOut | None:
    data = result.get("failure")
    if isinstance(data, dict):
        failure = FailureOut.model_validate(data)
        # Compiler output and tracebacks quote the source; others see the code and message only.
        return failure if full else failure.model_copy(update={"detail": ""})
    if record.error_code:
        return FailureOut(stage="grader", code=record.error_code, message=record.error_summary or "")
    return None


def problem_summary(problem: ProblemRecord) -> ProblemSummaryOut:
    meta = problem.meta
    return ProblemSummaryOut(name=problem.name, suite=problem.suite, level=problem.level, device=problem.device_kind,
                             precision=meta.precision, version=problem.content_hash, flops=meta.flops,
                             bytes=meta.bytes_moved, tags=list(meta.tags))


def problem_out(problem: ProblemRecord) -> ProblemOut:
    meta = problem.meta
    shapes = list(meta.input_shapes) if meta.input_shapes is not None else None
    return ProblemOut(**problem_summary(problem).model_dump(), description=meta.description,
                      precision_description=meta.precision_description, atol=meta.atol, rtol=meta.rtol,
                      input_shapes=shapes, source=problem.source, created_at=problem.created_at)
