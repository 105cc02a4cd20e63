"""Which timing inputs are scaled between reps: floating tensors not all of whole numbers. The first elements
are looked at first, so a fraction anywhere still counts and whole numbers everywhere still do not."""

from __future__ import annotations

import torch

from kernelgrade.evaluator.timing import SCALABLE_HEAD, scalable


def test_random_values_are_scaled() -> None:
    assert scalable(torch.rand(100))


def test_whole_numbers_stored_as_floats_are_not() -> None:
    mask = (torch.rand(3 * SCALABLE_HEAD) > 0.5).float()
    assert not scalable(mask)
    assert not scalable(mask.view(3, SCALABLE_HEAD).t())  # not contiguous: checked whole


def test_a_fraction_past_the_first_elements_counts() -> None:
    counts = torch.arange(3 * SCALABLE_HEAD, dtype=torch.float32)
    counts[-1] = 0.5
    assert scalable(counts)
    assert scalable(counts.view(3, SCALABLE_HEAD).t())


def test_integers_empty_tensors_and_other_values_are_not() -> None:
    assert not scalable(torch.arange(10))
    assert not scalable(torch.empty(0))
    assert not scalable(3.5)
