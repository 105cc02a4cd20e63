"""The speedup's 95 % interval from the two medians' intervals, and `timing_imprecise` where it is too wide to rank
a kernel by: measured samples summarized as the timing stage summarizes them."""

from __future__ import annotations

import random

import pytest

from kernelgrade.evaluator.result import Severity
from kernelgrade.evaluator.speedup_interval import IMPRECISE_SPAN, imprecision_findings, speedup_bounds
from kernelgrade.evaluator.timing import summarize


def _steady(median_ms: float, n: int = 200, spread: float = 0.02) -> list[float]:
    rng = random.Random(0)
    return [median_ms * (1 + rng.uniform(-spread, spread)) for _ in range(n)]


def test_the_bounds_are_the_fastest_reference_over_the_slowest_candidate_and_the_reverse() -> None:
    reference, candidate = summarize(_steady(2.0), "target_precision"), summarize(_steady(1.0), "target_precision")
    bounds = speedup_bounds(reference, candidate)
    assert bounds == (reference.ci95_low_ms / candidate.ci95_high_ms, reference.ci95_high_ms / candidate.ci95_low_ms)
    assert bounds[0] < 2.0 < bounds[1] and bounds[1] / bounds[0] < 1.05


def test_steady_times_give_no_finding() -> None:
    reference, candidate = summarize(_steady(0.4), "max_reps"), summarize(_steady(7.9, n=20), "target_precision")
    assert imprecision_findings(reference, candidate) == []


def test_times_a_busy_host_scattered_are_marked_for_review() -> None:
    """Reps of a few hundred microseconds stretched to a scheduler's slice now and then, as four spinning
    processes on a 2-core host did: the median's interval then spans tens of times."""
    rng = random.Random(1)
    scattered = [rng.choice((0.4, 2.0, 18.0, 36.0, 40.0)) for _ in range(25)]
    reference, candidate = summarize(scattered, "max_device_time"), summarize(_steady(40.0, n=9), "max_device_time")
    low, high = speedup_bounds(reference, candidate) or (0.0, 0.0)
    assert high > IMPRECISE_SPAN * low
    [finding] = imprecision_findings(reference, candidate)
    assert finding.code == "timing_imprecise" and finding.severity is Severity.REVIEW
    assert f"{low:.3g}x to {high:.3g}x" in finding.message and "grade it again on a quiet host" in finding.message


@pytest.mark.parametrize("candidate_low", [0.0, -1.0])
def test_no_interval_without_a_candidate_interval_above_zero(candidate_low: float) -> None:
    reference = summarize(_steady(1.0), "max_reps")
    candidate = summarize([candidate_low, 1.0, 1.0], "max_reps")
    assert speedup_bounds(reference, candidate) is None and imprecision_findings(reference, candidate) == []


def test_no_interval_without_both_sides() -> None:
    assert speedup_bounds(None, summarize(_steady(1.0), "max_reps")) is None
    assert imprecision_findings(summarize(_steady(1.0), "max_reps"), None) == []
