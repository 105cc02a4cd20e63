"""Chunked comparison gives the unchunked comparison's result: the same verdict, code and message, counts
and worst elements, and Frobenius errors equal up to the order of summation."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterator

import pytest
import torch

from kernelgrade.evaluator import PrecisionKind, PrecisionPolicy, compare_elements
from kernelgrade.evaluator.compare import Comparison, Expected, compare_values
from kernelgrade.evaluator.compare_memory import ORACLE_BYTES_PER_ELEMENT, MemoryBudget
from kernelgrade.evaluator.rounding import Rounding, round_to

FP32 = PrecisionPolicy()
TOLERANCE = PrecisionPolicy(kind=PrecisionKind.TOLERANCE, atol=1e-2, rtol=1e-2)
# Chunks of 999 elements on the output's device, and of 333 on the host: sizes that divide no output here,
# so chunk boundaries fall inside rows and the last chunk is short.
ON_DEVICE = MemoryBudget(device_bytes=int(999 * ORACLE_BYTES_PER_ELEMENT / 0.5), min_chunk=256)
ON_HOST = MemoryBudget(device_bytes=0, host_bytes=0, min_chunk=333)


def _expected(fn: Callable[..., torch.Tensor], *inputs: torch.Tensor) -> Expected:
    def rounded(rounding: Rounding) -> list[torch.Tensor]:
        return [fn(*(round_to(x, rounding) for x in inputs))]

    return Expected([fn(*inputs)], [fn(*(x.double() for x in inputs))], functools.cache(rounded))


def _cases() -> Iterator[tuple[str, list[torch.Tensor], Expected, PrecisionPolicy]]:
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(64, 512, generator=g), torch.randn(512, 96, generator=g)
    matmul = _expected(torch.matmul, a, b)
    yield "honest", [a @ b], matmul, FP32
    yield "tf32", [round_to(a, Rounding.TF32) @ round_to(b, Rounding.TF32)], matmul, FP32
    yield "bf16", [round_to(a, Rounding.BF16) @ round_to(b, Rounding.BF16)], matmul, FP32
    one_wrong = (a @ b).clone()
    one_wrong[3, 7] += 1.0
    yield "one_wrong", [one_wrong], matmul, FP32
    yield "zeros", [torch.zeros(64, 96)], matmul, FP32
    yield "tf32_policy", [round_to(a, Rounding.BF16) @ round_to(b, Rounding.BF16)], matmul, \
        PrecisionPolicy(kind=PrecisionKind.TF32)
    x = torch.randn(300, 77, generator=g)
    gelu = torch.nn.functional.gelu
    yield "tanh_gelu", [gelu(x, approximate="tanh")], _expected(gelu, x), FP32
    yield "relu_nudged", [torch.relu(x) * (1 + 2**-22)], _expected(torch.relu, x), FP32
    yield "tolerance_pass", [x + 0.005], Expected([x]), TOLERANCE
    yield "tolerance_fail", [x + 0.03 * (x > 1)], Expected([x]), TOLERANCE
    with_nan = x.clone()
    with_nan[5, 5] = float("nan")
    out = x.clone()
    out[5, 5], out[7, 7] = 3.0, float("inf")
    yield "inf_where_finite", [out], Expected([with_nan], [with_nan.double()]), FP32
    out[7, 7] = x[7, 7]
    yield "any_value_where_nan", [out], Expected([with_nan], [with_nan.double()]), FP32
    yield "two_outputs", [a @ b, x * 2], Expected([a @ b, x * 2], [a.double() @ b.double(), x.double() * 2]), FP32
    yield "transposed", [(a @ b).t()], Expected([(a @ b).t()], [(a.double() @ b.double()).t()]), FP32
    # Mostly zeros after a clamp, a few values just below it: the floor of PyTorch's own worst element decides.
    below = torch.cat([0.3 + 0.1 * torch.rand(5000, generator=g, dtype=torch.float64),
                       -0.5 - 2e-4 * torch.rand(8, generator=g, dtype=torch.float64)])
    clamped = lambda t: torch.minimum(t + 0.5, torch.zeros((), dtype=t.dtype))  # noqa: E731
    two_ulps = torch.nextafter(torch.nextafter(below.float(), torch.tensor(-1.0)), torch.tensor(-1.0))
    yield "clamped_two_ulps", [clamped(two_ulps)], Expected([clamped(below.float())], [clamped(below)]), FP32


CASES = list(_cases())


def _same(chunked: Comparison, whole: Comparison) -> None:
    assert (chunked.passed, chunked.code, chunked.message) == (whole.passed, whole.code, whole.message)
    for field in dataclasses.fields(Comparison):
        a, b = getattr(chunked, field.name), getattr(whole, field.name)
        if isinstance(b, float):
            assert a == pytest.approx(b, rel=1e-9, abs=1e-300), field.name
        else:
            assert a == b, field.name


@pytest.mark.parametrize("budget", [ON_DEVICE, ON_HOST], ids=["device_chunks", "host_chunks"])
@pytest.mark.parametrize(("name", "outs", "expected", "policy"), CASES, ids=[c[0] for c in CASES])
def test_chunked_comparison_equals_the_whole_one(name: str, outs: list[torch.Tensor], expected: Expected,
                                                 policy: PrecisionPolicy, budget: MemoryBudget) -> None:
    whole = compare_values(outs, expected, policy, MemoryBudget(device_bytes=1 << 40))
    _same(compare_values(outs, expected, policy, budget), whole)


def test_counts_and_maxima_are_exact_not_approximate(monkeypatch: pytest.MonkeyPatch) -> None:
    x = torch.randn(4099, generator=torch.Generator().manual_seed(2))
    out = x.clone()
    out[[10, 2000, 4098]] += torch.tensor([0.5, 0.7, 0.7])  # wrong elements in three chunks of 333
    expected = Expected([x], [x.double()])
    whole = compare_values([out], expected, FP32, MemoryBudget(device_bytes=1 << 40))
    chunks: list[int] = []
    part = compare_elements.ChunkedElements._part
    monkeypatch.setattr(compare_elements.ChunkedElements, "_part",
                        lambda self, start: chunks.append(start) or part(self, start))
    chunked = compare_values([out], expected, FP32, ON_HOST)
    assert set(chunks) == set(range(0, 4099, 333))
    assert "3 of 4099 values" in chunked.message and "index (2000,)" in chunked.message
    assert chunked.message == whole.message and chunked.max_abs_error == whole.max_abs_error


@pytest.mark.gpu
@pytest.mark.parametrize("budget", [ON_DEVICE, ON_HOST], ids=["device_chunks", "host_chunks"])
@pytest.mark.parametrize(("name", "outs", "expected", "policy"), CASES, ids=[c[0] for c in CASES])
def test_outputs_held_on_the_host_compare_as_on_the_device(name: str, outs: list[torch.Tensor],
                                                           expected: Expected, policy: PrecisionPolicy,
                                                           budget: MemoryBudget) -> None:
    """Outputs too large for the device stay on the host beside a reference and oracle on the device."""
    whole = compare_values(outs, expected, policy, MemoryBudget(device_bytes=1 << 40))
    rounded = expected.rounded
    on_gpu = Expected([r.cuda() for r in expected.refs],
                      None if expected.oracles is None else [o.cuda() for o in expected.oracles],
                      None if rounded is None else functools.cache(lambda r: [t.cuda() for t in rounded(r)]))
    _same(compare_values(outs, on_gpu, policy, budget), whole)


@pytest.mark.gpu
@pytest.mark.parametrize("budget", [MemoryBudget(device_bytes=1 << 40), ON_DEVICE, ON_HOST],
                         ids=["whole", "device_chunks", "host_chunks"])
@pytest.mark.parametrize(("name", "outs", "expected", "policy"), CASES, ids=[c[0] for c in CASES])
def test_an_oracle_computed_on_the_host_compares_as_on_the_device(name: str, outs: list[torch.Tensor],
                                                                 expected: Expected, policy: PrecisionPolicy,
                                                                 budget: MemoryBudget) -> None:
    """Where the float64 oracle did not fit the device, the judge computes it on the host
    (host/reference.py) beside outputs and references on the device."""
    whole = compare_values(outs, expected, policy, MemoryBudget(device_bytes=1 << 40))
    rounded = expected.rounded
    oracle_on_host = Expected([r.cuda() for r in expected.refs], expected.oracles,
                              None if rounded is None else functools.cache(lambda r: [t.cuda() for t in rounded(r)]))
    _same(compare_values([o.cuda() for o in outs], oracle_on_host, policy, budget), whole)
