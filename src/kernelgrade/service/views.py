"""Records from storage turned into response bodies, applying who may see what: sources and full results
only for their submitter, admins and the open-mode local user (or everyone, for a public submission)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from kernelgrade.sandbox_policy import UNSANDBOXED_WARNING, unsandboxed
from kernelgrade.service.auth import Principal
from kernelgrade.service.device_memory import with_reported
from kernelgrade.service.schemas import (
    DeviceFitOut,
    EnvironmentOut,
    EvaluationOut,
    FailureOut,
    ProblemMemoryOut,
    ProblemOut,
    ProblemSummaryOut,
    ProgressOut,
    SubmissionOut,
    VerdictName,
)
from kernelgrade.service.stored_result import StoredResult
from kernelgrade.storage.records import EnvironmentFields, EvaluationRecord, ProblemRecord, SubmissionView


def submission_out(view: SubmissionView, principal: Principal, *, with_source: bool = True,
                   duplicate: bool = False, warnings: list[str] | None = None,
                   stored: StoredResult | None = None) -> SubmissionOut:
    """`stored`: the evaluation's result, where the caller has read it already (the submission page)."""
    submission = view.submission
    owner_view = principal.may_read_source(submission)
    return SubmissionOut(
        id=submission.id, problem=submission.problem_name, problem_version=submission.problem_hash,
        submitter=submission.submitter, model=submission.model, public=submission.public,
        source_hash=submission.source_hash, created_at=submission.created_at,
        source=submission.source if with_source and owner_view else None,
        evaluation=_evaluation(view, stored, owner_view),
        duplicate=duplicate, warnings=warnings or [])


def _evaluation(view: SubmissionView, stored: StoredResult | None, full: bool) -> EvaluationOut | None:
    """`full`: the failure's detail and the whole result, for the submitter, admins and the open-mode user."""
    record = view.evaluation
    if record is None:
        return None
    stored = stored if stored is not None else StoredResult.read(record.result)
    return EvaluationOut(
        id=record.id, status=record.status.value, verdict=cast(VerdictName | None, record.verdict),
        requested_device=record.requested_device, device_class=record.device_class, attempts=record.attempts,
        speedup=record.speedup, speedup_vs_compiled=record.speedup_vs_compiled,
        speedup_interval=stored.speedup_interval() if record.speedup is not None else None,
        reference_median_ms=record.reference_median_ms, candidate_median_ms=record.candidate_median_ms,
        compiled_baseline=stored.baseline_out(), reference_timing=stored.reference_timing,
        candidate_timing=stored.candidate_timing, timing_method=stored.method.summary() if stored.method else None,
        reference_timed=(stored.method.reference_placement or None) if stored.method else None,
        failure=_failure(record, stored.failure, full), findings=stored.findings,
        environment=_environment(record.environment) if record.environment else None,
        progress=ProgressOut.model_validate(record.progress, from_attributes=True) if record.progress else None,
        queue_position=view.queue_position, last_error=record.last_error, created_at=record.created_at,
        started_at=record.started_at, finished_at=record.finished_at, result=record.result if full else None)


def _failure(record: EvaluationRecord, stored: FailureOut | None, full: bool) -> FailureOut | None:
    if stored is not None:
        # Compiler output and tracebacks quote the source; others see the code and message only.
        return stored if full else stored.model_copy(update={"detail": ""})
    if record.error_code:  # ended by the queue (attempts used up): no result, only the columns
        return FailureOut(stage="grader", code=record.error_code, message=record.error_summary or "")
    return None


def _environment(environment: EnvironmentFields) -> EnvironmentOut:
    warning = UNSANDBOXED_WARNING if unsandboxed(environment.sandbox) else None
    return EnvironmentOut.model_validate(environment, from_attributes=True).model_copy(update={"warning": warning})


def problem_summary(problem: ProblemRecord) -> ProblemSummaryOut:
    meta = problem.meta
    return ProblemSummaryOut(name=problem.name, suite=problem.suite, level=problem.level, device=problem.device_kind,
                             precision=meta.precision, version=problem.content_hash, flops=meta.flops,
                             bytes=meta.bytes_moved, tags=list(meta.tags))


def problem_out(problem: ProblemRecord, device_memory: Mapping[str, int]) -> ProblemOut:
    """`device_memory`: what judges of each device class reported they can allocate (storage.workers)."""
    meta = problem.meta
    shapes = list(meta.input_shapes) if meta.input_shapes is not None else None
    return ProblemOut(**problem_summary(problem).model_dump(), description=meta.description,
                      precision_description=meta.precision_description, atol=meta.atol, rtol=meta.rtol,
                      input_shapes=shapes, memory=problem_memory(problem, device_memory),
                      memory_note=meta.memory_note, source=problem.source, created_at=problem.created_at)


def problem_memory(problem: ProblemRecord, device_memory: Mapping[str, int]) -> ProblemMemoryOut | None:
    need = problem.meta.memory
    if need is None:
        return None
    devices = [] if problem.device_kind != "cuda" else [
        DeviceFitOut(device_class=name, memory_bytes=size, fits=need.fits(size))
        for name, size in sorted(with_reported(device_memory).items())]
    return ProblemMemoryOut(bytes=need.total, least_bytes=need.least, inputs_bytes=need.inputs,
                            weights_bytes=need.weights, outputs_bytes=need.outputs, oracle_bytes=need.oracle,
                            comparison_bytes=need.comparison, timing_bytes=need.timing, devices=devices)
