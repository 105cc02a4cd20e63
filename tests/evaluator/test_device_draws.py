"""Large random inputs drawn on the judge's device a chunk at a time and handed to get_inputs() as CPU tensors.
Here the CPU stands in for the GPU (the same code with a CPU generator); the GPU test draws on a real one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

from kernelgrade.evaluator.host import device_draws
from kernelgrade.evaluator.host.seeded_draws import SeededDraws

CPU = torch.device("cpu")


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(device_draws, "DEVICE_DRAW_MIN", 64)
    monkeypatch.setattr(device_draws, "DEVICE_DRAW_CHUNK", 100)  # 1000 elements: ten chunks


def draw(func: Callable[..., Any], *args: Any, **kwargs: Any) -> torch.Tensor | None:
    return device_draws.drawn(func, args, kwargs, CPU, torch.Generator(device=CPU).manual_seed(3))


@pytest.mark.parametrize(("func", "args", "kwargs", "shape", "dtype"), [
    (torch.rand, (10, 100), {}, (10, 100), torch.float32),
    (torch.randn, ((10, 100),), {}, (10, 100), torch.float32),
    (torch.rand, (), {"size": [1000], "dtype": torch.float64}, (1000,), torch.float64),
    (torch.randint, (7, (25, 40)), {}, (25, 40), torch.int64),
    (torch.randint, (2, 7, torch.Size([1000])), {"dtype": torch.int32}, (1000,), torch.int32),
])
def test_each_form_of_call_gives_the_shape_and_dtype_asked_for_on_the_cpu(
        func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], shape: tuple[int, ...],
        dtype: torch.dtype) -> None:
    made = draw(func, *args, **kwargs)
    assert made is not None
    assert made.device == CPU and made.shape == shape and made.dtype == dtype and made.is_contiguous()
    assert torch.equal(made, draw(func, *args, **kwargs))  # the seed fixes the values
    if func is torch.randint:
        low, high = (0, args[0]) if len(args) == 2 else args[:2]
        assert int(made.min()) >= low and int(made.max()) < high
    elif func is torch.rand:
        assert float(made.min()) >= 0 and float(made.max()) < 1
    # Every chunk was drawn: no chunk is left at what torch.empty happened to hold, nor repeats the first.
    chunks = made.reshape(-1)[:1000].split(100)
    assert all(not torch.equal(chunks[0], c) for c in chunks[1:])


def test_the_flags_of_the_call_are_kept() -> None:
    made = draw(torch.randn, 10, 100, requires_grad=True)
    assert made is not None and made.requires_grad


@pytest.mark.parametrize(("func", "args", "kwargs"), [
    (torch.rand, (4, 4), {}),  # too small to gain
    (torch.rand, (10, 100), {"names": ("a", "b")}),  # an argument it does not know
    (torch.randn, (10, 100), {"layout": torch.sparse_coo}),
    (torch.randperm, (1000,), {}),  # a draw it does not make
    (torch.randint, (1000,), {}),  # no size: torch's own error, from torch's own call
])
def test_calls_it_does_not_handle_are_left_to_torch(func: Callable[..., Any], args: tuple[Any, ...],
                                                    kwargs: dict[str, Any]) -> None:
    assert draw(func, *args, **kwargs) is None


def test_seeded_inputs_drawn_on_a_device_are_the_same_for_the_same_seed_and_leave_the_global_generator() -> None:
    def get_inputs() -> list[torch.Tensor]:
        return [torch.rand(20, 50), torch.randint(0, 5, (1000,)), torch.randn(3)]

    before = torch.get_rng_state()
    first = SeededDraws("p").run(11, get_inputs, on=CPU)
    again = SeededDraws("p").run(11, get_inputs, on=CPU)
    other = SeededDraws("p").run(12, get_inputs, on=CPU)
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    assert not torch.equal(first[0], other[0])
    assert torch.equal(before, torch.get_rng_state())


@pytest.mark.gpu
def test_on_a_gpu_large_inputs_are_drawn_there_and_handed_over_on_the_cpu() -> None:
    gpu = torch.device("cuda", 0)

    def get_inputs() -> list[torch.Tensor]:
        return [torch.rand(4096, 4096), torch.randn(1 << 20)]

    first = SeededDraws("p").run(5, get_inputs, on=gpu)
    assert all(t.device == CPU for t in first)
    assert all(torch.equal(a, b) for a, b in zip(first, SeededDraws("p").run(5, get_inputs, on=gpu), strict=True))
    assert 0.49 < float(first[0].mean()) < 0.51 and 0.99 < float(first[1].std()) < 1.01
