"""How many timing input sets the candidate's and the reference's run children can hold at once, with the sizes
of the KernelBench problems whose judges ran out of an H200's memory while both children held three sets."""

from __future__ import annotations

from kernelgrade.evaluator import timing
from kernelgrade.evaluator.timing_room import CHILDREN_SHARE, TimingFootprint, sets_that_fit

GiB = 1024**3
# What was free beside a judge and a candidate's child on an H200 when timing began.
H200_FREE = 120 * GiB
# 45_Average_Pooling_2D: a 16 GiB input, a 0.13 GiB output.
AVERAGE_POOL = TimingFootprint(set_bytes=16 * GiB, output_bytes=GiB * 2 // 15)
# 34_InstanceNorm: 7 GiB in, 7 GiB out.
INSTANCE_NORM = TimingFootprint(set_bytes=7 * GiB, output_bytes=7 * GiB)


def test_the_candidate_holds_its_sets_a_scaled_copy_and_its_kept_outputs_the_reference_no_kept_ones() -> None:
    sets = 3
    assert INSTANCE_NORM.candidate(sets) == (3 + 1) * 7 * GiB + (1 + 3 + timing.SAMPLED_OUTPUTS) * 7 * GiB
    assert INSTANCE_NORM.reference(sets) == (3 + 1) * 7 * GiB + 7 * GiB
    assert INSTANCE_NORM.both(sets) == 70 * GiB + 35 * GiB


def test_the_largest_problems_are_timed_on_the_sets_that_fit() -> None:
    assert AVERAGE_POOL.both(2) > H200_FREE * CHILDREN_SHARE >= AVERAGE_POOL.both(1)
    assert sets_that_fit(AVERAGE_POOL, 3, H200_FREE) == 1
    assert sets_that_fit(INSTANCE_NORM, 3, H200_FREE) == 2


def test_a_problem_that_fits_keeps_every_set_and_none_goes_below_one() -> None:
    small = TimingFootprint(set_bytes=64 * 1024**2, output_bytes=64 * 1024**2)
    assert sets_that_fit(small, 3, H200_FREE) == 3
    assert sets_that_fit(AVERAGE_POOL, 3, 8 * GiB) == 1
    assert sets_that_fit(small, 1, 0) == 1
