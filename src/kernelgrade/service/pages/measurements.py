"""How the submission page words its measurements: each trial's errors, and why a timing loop stopped.

A trial shows the norm-wise relative error, ||output - expected|| / ||expected|| over the whole output: the
figure a failure message quotes as "Relative error". The elementwise max |output - ref| / |ref| that results
also carry is left off: it divides by reference values near zero and reads 1e12 for an output that is fine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def trial_row(trial: dict[str, Any]) -> TrialRow:
    oracle = _number(trial.get("rel_error_vs_oracle"))
    return TrialRow(index=int(trial.get("index", 0)), secret=bool(trial.get("secret")),
                    passed=bool(trial.get("passed")), message=str(trial.get("message") or ""),
                    relative_error=oracle if oracle is not None else _number(trial.get("rel_error_vs_reference")),
                    pytorch_error=_number(trial.get("reference_error_vs_oracle")),
                    max_abs_error=_number(trial.get("max_abs_error")))


def trials(result: dict[str, Any]) -> Trials:
    raw = [t for t in result.get("trials") or [] if isinstance(t, dict)]
    with_oracle = any(_number(t.get("rel_error_vs_oracle")) is not None for t in raw)
    return Trials([trial_row(t) for t in raw], "float64 result" if with_oracle else "reference")


def stop_reason(reason: str) -> str:
    """`target_precision+max_reps` -> `before: precise enough; after: rep cap`: the reference is timed before
    and after the candidate."""
    parts = [STOP_REASONS.get(part, part.replace("_", " ")) for part in reason.split("+")]
    if len(parts) == 2:
        return f"{parts[0]}, before and after" if parts[0] == parts[1] else f"before: {parts[0]}; after: {parts[1]}"
    return "; ".join(parts)
