"""How the submission page words its measurements: each trial's errors, and why a timing loop stopped.

A trial shows the norm-wise relative error, ||output - expected|| / ||expected|| over the whole output: the
figure a failure message quotes as "Relative error". The elementwise max |output - ref| / |ref| that results
also carry is left off: it divides by reference values near zero and reads 1e12 for an output that is fine.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernelgrade.service.stored_result import StoredTrial

# What the timing loop's stop reasons mean (evaluator/timing.py); the reference's is "before+after".
STOP_REASONS = {"target_precision": "precise enough", "max_reps": "rep cap", "max_device_time": "device-time cap",
                "max_wall_time": "wall-time cap"}


@dataclass(frozen=True)
class TrialRow:
    index: int
    secret: bool
    passed: bool
    message: str
    relative_error: float | None
    pytorch_error: float | None  # the fp32 reference's own relative error against float64
    max_abs_error: float | None


@dataclass(frozen=True)
class Trials:
    rows: list[TrialRow]
    # What the relative error is measured against: "float64 result" (fp32 and tf32 problems) or "reference"
    # (problems judged by a tolerance, which have no float64 oracle).
    against: str


def trial_row(trial: StoredTrial) -> TrialRow:
    oracle = trial.rel_error_vs_oracle
    return TrialRow(index=trial.index, secret=trial.secret, passed=trial.passed, message=trial.message,
                    relative_error=oracle if oracle is not None else trial.rel_error_vs_reference,
                    pytorch_error=trial.reference_error_vs_oracle, max_abs_error=trial.max_abs_error)


def trials(stored: list[StoredTrial]) -> Trials:
    with_oracle = any(t.rel_error_vs_oracle is not None for t in stored)
    return Trials([trial_row(t) for t in stored], "float64 result" if with_oracle else "reference")


def stop_reason(reason: str) -> str:
    """`target_precision+max_reps` -> `before: precise enough; after: rep cap`: the reference is timed before
    and after the candidate."""
    parts = [STOP_REASONS.get(part, part.replace("_", " ")) for part in reason.split("+")]
    if len(parts) == 2:
        return f"{parts[0]}, before and after" if parts[0] == parts[1] else f"before: {parts[0]}; after: {parts[1]}"
    return "; ".join(parts)
