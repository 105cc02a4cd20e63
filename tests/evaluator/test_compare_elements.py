"""WholeElements.exceeds answers from the largest difference where that is below every element's bound: it must
say what the elementwise test itself says, at the edges too."""

from __future__ import annotations

import pytest
import torch

from kernelgrade.evaluator.compare_elements import WholeElements

FACTOR = 1e-3


def _elementwise(elements: WholeElements, factor: float, floor: float) -> bool:
    """The test itself: any difference past its element's bound."""
    return bool((elements.diff > elements.bound(factor, floor)).any())


def _case(seed: int, error: float, planted: float | None) -> WholeElements:
    generator = torch.Generator().manual_seed(seed)
    oracle = torch.randn(4096, generator=generator, dtype=torch.float64) * torch.logspace(-3, 3, 4096,
                                                                                        dtype=torch.float64)
    out = (oracle * (1 + error * torch.randn(4096, generator=generator, dtype=torch.float64))).float()
    if planted is not None:  # one element near zero, off by `planted`: the RMS part of its bound decides
        oracle[7] = 0.0
        out[7] = planted
    return WholeElements(out, oracle.float(), oracle)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("error", [0.0, 1e-9, 1e-6, 1e-3])
@pytest.mark.parametrize("planted", [None, 1e-4, 1e-2, 1.0])
@pytest.mark.parametrize("floor", [0.0, 1e-6, 1e-2])
def test_exceeds_says_what_the_elementwise_test_says(seed: int, error: float, planted: float | None,
                                                     floor: float) -> None:
    elements = _case(seed, error, planted)
    assert elements.exceeds(FACTOR, floor) == _elementwise(elements, FACTOR, floor)


def test_a_largest_difference_exactly_at_the_rms_bound_does_not_exceed_it() -> None:
    """At the edge of the early answer: the largest difference equals factor x RMS, the bound of an element whose
    oracle value is zero."""
    oracle = torch.tensor([0.0, 3.0, -4.0], dtype=torch.float64)
    rms = float(torch.linalg.vector_norm(oracle)) / 3**0.5
    out = oracle.clone()
    out[0] = FACTOR * rms
    elements = WholeElements(out, oracle, oracle)
    assert float(elements.diff.max()) == FACTOR * rms
    assert not elements.exceeds(FACTOR, 0.0) and not _elementwise(elements, FACTOR, 0.0)
    out[0] = torch.nextafter(torch.tensor(FACTOR * rms, dtype=torch.float64), torch.tensor(1.0, dtype=torch.float64))
    past = WholeElements(out, oracle, oracle)
    assert past.exceeds(FACTOR, 0.0) and _elementwise(past, FACTOR, 0.0)


def test_a_nan_difference_takes_the_full_test() -> None:
    """Where the reference is finite but the oracle is not, the difference is NaN there, and never past a bound."""
    oracle = torch.tensor([float("nan"), 1.0, 2.0], dtype=torch.float64)
    ref = torch.tensor([0.5, 1.0, 2.0])
    elements = WholeElements(ref.clone(), ref, oracle)
    assert elements.exceeds(FACTOR, 0.0) == _elementwise(elements, FACTOR, 0.0)


def test_differences_past_the_early_answer_but_within_their_own_bounds_do_not_exceed() -> None:
    """Every element off by half its own bound: the largest difference is past twice factor x RMS (the values span
    six decades), so the answer comes from the elementwise test, and it is no."""
    oracle = torch.logspace(-3, 3, 4096, dtype=torch.float64)
    elements = WholeElements(oracle * (1 + FACTOR / 2), oracle.float(), oracle)
    assert float(elements.diff.max()) > 2 * FACTOR * elements._root_mean_square()
    assert not elements.exceeds(FACTOR, 0.0) and not _elementwise(elements, FACTOR, 0.0)
