"""The evaluator's result JSON as the HTTP edge reads it: the stored blob is parsed once, by these models,
into the response's own types (TimingOut, FailureOut, FindingOut, CompiledBaselineOut) plus what only the
pages show (trials, timing samples). They declare the parts of the blob that the API and the pages read;
what they do not declare (logs, stage times, ...) reaches owners unparsed in EvaluationOut.result.

Fields the evaluator added over time have defaults (its own, or "?" where the edge shows that it does not
know), so rows stored by earlier versions read as they did; tests/service/stored_result.json is a row
stored by an earlier version that must go on reading."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from kernelgrade.service.schemas import CompiledBaselineOut, FailureOut, FindingOut, SpeedupIntervalOut, TimingOut
from kernelgrade.speedup_bounds import speedup_bounds
from kernelgrade.storage.records import EvaluatorJson

log = logging.getLogger(__name__)

MIB = 1024 * 1024


class StoredTiming(TimingOut):
    """A timing as stored: the API's fields and the samples the submission page plots. Where a StoredTiming
    is given for a TimingOut field of a response, only TimingOut's fields are serialized."""

    samples_ms: list[float] = Field(default_factory=list)


class StoredTrial(BaseModel):
    index: int
    secret: bool
    passed: bool
    message: str = ""
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    rel_error_vs_reference: float | None = None
    rel_error_vs_oracle: float | None = None
    reference_error_vs_oracle: float | None = None


class StoredMethod(BaseModel):
    """The fields of the evaluator's timing method that EvaluationOut.timing_method sums up, and how the
    reference was timed (EvaluationOut.reference_timed)."""

    clock: str = "?"
    flush_bytes: int = 0
    precision_flags: str = "?"
    reference_placement: str = ""

    def summary(self) -> str:
        return f"{self.clock}; {self.flush_bytes // MIB} MiB cache flush per rep; {self.precision_flags}"


class StoredBaseline(BaseModel):
    status: Literal["measured", "failed"]
    backend: str
    measured_at: datetime
    timing: StoredTiming | None = None
    message: str = ""


PENDING_BASELINE = CompiledBaselineOut(status="pending", median_ms=None, backend="inductor (mode default)",
                                      measured_at=None, reused=True, message="")


class StoredResult(BaseModel):
    failure: FailureOut | None = None
    findings: list[FindingOut] = []
    trials: list[StoredTrial] = []
    reference_timing: StoredTiming | None = None
    candidate_timing: StoredTiming | None = None
    method: StoredMethod | None = None
    compiled_baseline: StoredBaseline | None = None
    compiled_baseline_reused: bool = False
    # Graded before its problem had a baseline; filled in once a judge has measured one.
    compiled_baseline_pending: bool = False

    @classmethod
    def read(cls, data: EvaluatorJson | None) -> StoredResult:
        """The parts of a stored result; none (the row's columns still say the verdict, speedup and error)
        for a job that has no result yet or one that does not read, which is logged rather than raised so that
        one bad row cannot make a listing fail."""
        if not data:
            return cls()
        try:
            return cls.model_validate(data)
        except ValidationError:
            log.warning("a stored result does not read as the evaluator's result; showing its columns only",
                        exc_info=True)
            return cls()

    def baseline_out(self) -> CompiledBaselineOut | None:
        """The torch.compile baseline as the API shows it: its median beside its status, and whether this
        evaluation measured it or reused an earlier measurement."""
        baseline = self.compiled_baseline
        if baseline is None:
            return PENDING_BASELINE if self.compiled_baseline_pending else None
        median = baseline.timing.median_ms if baseline.timing is not None else None
        return CompiledBaselineOut(status=baseline.status, median_ms=median, backend=baseline.backend,
                                   measured_at=baseline.measured_at, reused=self.compiled_baseline_reused,
                                   message=baseline.message)

    def speedup_interval(self) -> SpeedupIntervalOut | None:
        """A conservative 95% interval on reference/candidate from the two medians' intervals: the fastest
        reference over the slowest candidate bounds it from below, and the reverse from above (the evaluator's
        timing_imprecise finding reads the same interval)."""
        reference, candidate = self.reference_timing, self.candidate_timing
        if reference is None or candidate is None:
            return None
        bounds = speedup_bounds(reference.ci95_low_ms, reference.ci95_high_ms, candidate.ci95_low_ms,
                                candidate.ci95_high_ms)
        return SpeedupIntervalOut(low=bounds[0], high=bounds[1]) if bounds else None
