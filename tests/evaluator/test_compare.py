"""The precision policies on outputs built to have known errors (docs/grading.md): honest fp32 summation
orders pass, lower-precision arithmetic and other functions fail with a message that names what differs."""

from __future__ import annotations

import functools

import pytest
import torch

from kernelgrade.evaluator import PrecisionKind, PrecisionPolicy
from kernelgrade.evaluator.compare import Expected, compare_values
from kernelgrade.evaluator.rounding import Rounding, round_to

FP32 = PrecisionPolicy()


def _expected(fn, *inputs: torch.Tensor) -> Expected:  # type: ignore[no-untyped-def]
    def rounded(rounding: Rounding) -> list[torch.Tensor]:
        return [fn(*(round_to(x, rounding) for x in inputs))]

    return Expected([fn(*inputs)], [fn(*(x.double() for x in inputs))], functools.cache(rounded))


def _sequential_matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    out = torch.zeros(a.shape[0], b.shape[1])
    for k in range(a.shape[1]):
        out = out + a[:, k : k + 1] * b[k : k + 1, :]
    return out


@pytest.fixture(scope="module")
def long_k() -> tuple[torch.Tensor, torch.Tensor]:
    # A seed under which the sequential sum puts 6 of the 32768 outputs outside allclose(atol=rtol=1e-4).
    generator = torch.Generator().manual_seed(3)
    return torch.randn(64, 4096, generator=generator), torch.randn(4096, 512, generator=generator)


def test_a_sequential_fp32_matmul_passes_although_allclose_rejects_it(long_k: tuple[torch.Tensor, ...]) -> None:
    a, b = long_k
    candidate = _sequential_matmul(a, b)
    expected = _expected(torch.matmul, a, b)
    assert not torch.allclose(candidate, expected.refs[0], atol=1e-4, rtol=1e-4)
    assert compare_values([candidate], expected, FP32).passed


def test_a_sequential_sum_of_16384_terms_passes_at_20x_pytorchs_error() -> None:
    x = torch.randn(64, 16384, generator=torch.Generator().manual_seed(1))
    acc = torch.zeros(64)
    for c in range(x.shape[1]):
        acc = acc + x[:, c]
    result = compare_values([acc], _expected(lambda t: t.sum(1), x), FP32)
    assert result.passed
    assert result.rel_error_vs_oracle is not None and result.reference_error_vs_oracle is not None
    assert result.rel_error_vs_oracle > 8 * result.reference_error_vs_oracle


@pytest.mark.parametrize(("rounding", "named"), [(Rounding.TF32, "TF32"), (Rounding.BF16, "bf16")])
def test_rounded_inputs_fail_and_are_named(long_k: tuple[torch.Tensor, ...], rounding: Rounding, named: str) -> None:
    a, b = long_k
    candidate = round_to(a, rounding) @ round_to(b, rounding)
    result = compare_values([candidate], _expected(torch.matmul, a, b), FP32)
    assert not result.passed
    assert result.code == "precision"
    assert f"rounded to {named}" in result.message


def test_tanh_gelu_is_a_different_function_not_lower_precision() -> None:
    x = torch.randn(256, 256, generator=torch.Generator().manual_seed(2))
    gelu = torch.nn.functional.gelu
    result = compare_values([gelu(x, approximate="tanh")], _expected(gelu, x), FP32)
    assert not result.passed
    assert result.code == "values"
    assert "values differ from the float64 result by more than fp32 rounding allows" in result.message
    assert "where float64 gives" in result.message
    assert "precision" not in result.message


def test_zeros_for_tiny_outputs_fail() -> None:
    a, b = torch.randn(64, 64), torch.randn(64, 64)
    result = compare_values([torch.zeros(64, 64)], _expected(lambda x, y: x * y * 1e-7, a, b), FP32)
    assert not result.passed and result.code == "values"


def test_a_few_wrong_elements_fail_elementwise_though_the_norm_barely_moves(long_k: tuple[torch.Tensor, ...]) -> None:
    a, b = long_k
    expected = _expected(torch.matmul, a, b)
    candidate = expected.refs[0].clone()
    candidate[3, 7] += 0.05 * float(candidate.abs().mean())
    result = compare_values([candidate], expected, FP32)
    assert not result.passed
    assert "1 of 32768 values" in result.message and "index (3, 7)" in result.message


def test_an_exact_reference_allows_a_few_ulps() -> None:
    x = torch.randn(1000)
    nudged = torch.nextafter(torch.relu(x), torch.full_like(x, float("inf")))
    assert compare_values([nudged], _expected(torch.relu, x), FP32).passed


def test_the_tolerance_policy_is_kernelbenchs_allclose() -> None:
    policy = PrecisionPolicy(kind=PrecisionKind.TOLERANCE, atol=1e-2, rtol=1e-2)
    x = torch.ones(10)
    assert compare_values([x + 0.015], Expected([x]), policy).passed
    result = compare_values([x + 0.03], Expected([x]), policy)
    assert not result.passed and "atol=0.01" in result.message


def test_the_tf32_policy_accepts_tf32_and_rejects_bf16(long_k: tuple[torch.Tensor, ...]) -> None:
    a, b = long_k
    policy = PrecisionPolicy(kind=PrecisionKind.TF32)
    expected = _expected(torch.matmul, a, b)
    assert compare_values([round_to(a, Rounding.TF32) @ round_to(b, Rounding.TF32)], expected, policy).passed
    assert not compare_values([round_to(a, Rounding.BF16) @ round_to(b, Rounding.BF16)], expected, policy).passed


def test_tf32_rounding_matches_the_hardwares_round_to_nearest_away() -> None:
    ulp = 2.0**-10  # TF32's last mantissa bit at 1.0
    x = torch.tensor([1.0 + ulp / 2, 1.0 + ulp / 4, -(1.0 + ulp / 2), float("inf"), float("nan")])
    rounded = round_to(x, Rounding.TF32)
    assert rounded[:3].tolist() == [1.0 + ulp, 1.0, -(1.0 + ulp)]
    assert rounded[3] == float("inf") and bool(torch.isnan(rounded[4]))


@pytest.fixture(scope="module")
def positive_long_k() -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(4)
    return torch.rand(64, 4096, generator=generator), torch.rand(4096, 512, generator=generator)


def test_tf32_inputs_whose_error_averages_out_still_fail_by_their_signature(
        positive_long_k: tuple[torch.Tensor, ...]) -> None:
    # On sums of 4096 positive products, round-to-nearest TF32 errors average out: with a reference as
    # inaccurate as a GPU's fp32 (here a sequential sum, 10x MKL's error), TF32 lands within the 16x limit.
    a, b = positive_long_k
    expected = _expected(torch.matmul, a, b)
    gpu_like = Expected([_sequential_matmul(a, b)], expected.oracles, expected.rounded)
    tf32 = _sequential_matmul(round_to(a, Rounding.TF32), round_to(b, Rounding.TF32))
    result = compare_values([tf32], gpu_like, FP32)
    assert result.rel_error_vs_oracle is not None and result.reference_error_vs_oracle is not None
    assert result.rel_error_vs_oracle < FP32.oracle_ratio * result.reference_error_vs_oracle
    assert not result.passed and result.code == "precision"
    assert "within what fp32 rounding could explain" in result.message and "TF32" in result.message


def test_an_honest_sequential_sum_of_positive_products_passes(positive_long_k: tuple[torch.Tensor, ...]) -> None:
    a, b = positive_long_k
    result = compare_values([_sequential_matmul(a, b)], _expected(torch.matmul, a, b), FP32)
    assert result.passed, result.message


def _mostly_zero_after_a_clamp(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Pre-activation sums as in KernelBench level 2's ConvTranspose2d + 0.5, min(x, 0), GELU, x 2: nearly all of
    them clamp to exact zeros, a few land deep in GELU's negative side, a few just below the clamp. In float64,
    and rounded to fp32 as PyTorch's own sum would leave them."""
    generator = torch.Generator().manual_seed(seed)
    x = 0.3 + 0.1 * torch.randn(1 << 18, generator=generator, dtype=torch.float64)
    x[:16] = -1.25 + 0.05 * torch.randn(16, generator=generator, dtype=torch.float64)
    x[16:32] = -0.5 - 2e-4 * torch.rand(16, generator=generator, dtype=torch.float64)
    return x, x.float()


def _clamped_gelu(x: torch.Tensor) -> torch.Tensor:
    return 2.0 * torch.nn.functional.gelu(torch.minimum(x + 0.5, torch.zeros((), dtype=x.dtype)))


def test_sums_two_ulps_off_pass_where_a_clamp_leaves_mostly_zeros() -> None:
    # On an H200 the reference of that problem, graded against itself, failed so: 1 of 276,889,600 values off by
    # 1.2e-7 (two fp32 units at 0.5) where |value| + RMS allowed 9.1e-8, the RMS being tiny. A sum in another
    # order is off by a unit or two; the clamp makes that error large against the output. Without the TF32
    # yardstick (the limit widened to 1/16 of what TF32 inputs give, which on the H200 did not cover it either),
    # this checks the elementwise bound at fp32's own limit.
    exact, summed = _mostly_zero_after_a_clamp(seed=0)
    other_order = torch.nextafter(torch.nextafter(summed, torch.tensor(-1.0)), torch.tensor(-1.0))
    expected = Expected([_clamped_gelu(summed)], [_clamped_gelu(exact)])
    assert compare_values([_clamped_gelu(other_order)], expected, FP32).passed


def test_a_wrong_value_just_below_the_clamp_still_fails() -> None:
    exact, summed = _mostly_zero_after_a_clamp(seed=0)
    expected = Expected([_clamped_gelu(summed)], [_clamped_gelu(exact)])
    candidate = _clamped_gelu(summed)
    candidate[20] = 0.0
    result = compare_values([candidate], expected, FP32)
    assert not result.passed and "1 of 262144 values" in result.message and "index (20,)" in result.message


@pytest.mark.parametrize("policy", [FP32, PrecisionPolicy(kind=PrecisionKind.TF32),
                                    PrecisionPolicy(kind=PrecisionKind.TOLERANCE)], ids=lambda p: p.kind.value)
@pytest.mark.parametrize("error", [1e-14, 1e-1], ids=["right", "wrong"])
def test_float64_outputs_and_expected_values_are_left_as_they_were(policy: PrecisionPolicy, error: float) -> None:
    """The comparison reuses its float64 temporaries in place. Where an output and its reference are float64
    already, it holds those tensors themselves: it must not write into them (a kept trial's expected outputs
    serve the evaluations after)."""
    x = torch.randn(4096, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    out, expected = x * 3 + error, Expected([x * 3], [x * 3])
    before = [t.clone() for t in (out, *expected.refs, *(expected.oracles or []))]
    assert compare_values([out], expected, policy).passed is (error < 1e-6)
    after = [out, *expected.refs, *(expected.oracles or [])]
    assert all(torch.equal(a, b) for a, b in zip(before, after, strict=True))
