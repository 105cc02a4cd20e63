"""The timing loop's stopping rule (docs/timing.md): the median's 95 % CI, or a budget, whichever comes first."""

from __future__ import annotations

import random

from kernelgrade.evaluator.request import TimingParams
from kernelgrade.evaluator.timing import _stop_reason, median_ci_halfwidth

PARAMS = TimingParams()


def _reps_until_stop(samples: list[float], params: TimingParams = PARAMS) -> tuple[int, str]:
    for n in range(1, len(samples) + 1):
        reason = _stop_reason(samples[:n], params, wall_ms=0.0)
        if reason:
            return n, reason
    return len(samples), "max_reps"


def _microsecond_kernel(reps: int, seed: int) -> list[float]:
    """A 5 us kernel's device times: 2 % jitter, and one rep in 50 stretched tenfold by a host hiccup (the
    first early): the mean's standard error stays above 3 % for a thousand reps, the median hardly moves."""
    rng = random.Random(seed)
    return [0.005 * (10.0 if i % 50 == 5 else rng.gauss(1.0, 0.02)) for i in range(reps)]


def test_a_microsecond_kernel_with_rare_outliers_stops_in_a_few_dozen_reps() -> None:
    for seed in range(5):
        samples = _microsecond_kernel(PARAMS.max_reps, seed)
        n, reason = _reps_until_stop(samples)
        assert reason == "target_precision" and n < 300, (seed, n)
        assert median_ci_halfwidth(samples[:n]) <= PARAMS.target_median_ci


def test_the_rule_waits_for_min_reps_however_steady_the_samples() -> None:
    assert _reps_until_stop([1.0] * 100) == (PARAMS.min_reps, "target_precision")


def test_a_spread_out_kernel_runs_until_a_budget_ends_it() -> None:
    rng = random.Random(0)
    bimodal = [rng.choice((2.0, 3.0)) for _ in range(PARAMS.max_reps)]  # the median flips between the modes
    assert _reps_until_stop(bimodal, TimingParams(max_device_ms=1e9)) == (PARAMS.max_reps, "max_reps")
    n, reason = _reps_until_stop(bimodal)
    assert reason == "max_device_time" and sum(bimodal[:n]) >= PARAMS.max_device_ms > sum(bimodal[:n - 1])
