"""A trial's inputs made on the judge's GPU: get_inputs() goes on with its large draws there, the values land on
the host once, and the device tensors are the reference's copies (host/device_inputs.py). Here the CPU stands in
for the GPU where it can; what only a GPU shows runs there."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

from kernelgrade.evaluator import device_draws
from kernelgrade.evaluator.host.device_inputs import DeviceInputs
from kernelgrade.evaluator.host.seeded_draws import SeededDraws

CPU = torch.device("cpu")


@pytest.fixture(autouse=True)
def small_draws(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(device_draws, "DEVICE_DRAW_MIN", 64)
    monkeypatch.setattr(device_draws, "DEVICE_DRAW_CHUNK", 100)


def scaled() -> list[Any]:
    """KernelBench's 94_MSELoss, smaller: a small draw scales a large one."""
    scale = torch.rand(())
    return [torch.rand(10, 100) * scale, torch.randint(0, 2, (1000,)).bool(), 3]


def usual(get_inputs: Callable[[], list[Any]], seed: int, device: torch.device) -> list[Any]:
    return SeededDraws("p").run(seed, get_inputs, on=device)


def made(get_inputs: Callable[[], list[Any]], seed: int, device: torch.device,
         inputs: DeviceInputs | None = None) -> tuple[list[Any], list[Any]] | None:
    inputs = inputs or DeviceInputs("p", SeededDraws("p"), device)
    return inputs.made(seed, get_inputs)


def equal(a: list[Any], b: list[Any]) -> bool:
    return all(torch.equal(x.cpu(), y.cpu()) if isinstance(x, torch.Tensor) else x == y
               for x, y in zip(a, b, strict=True))


def test_the_draws_give_the_values_the_usual_way_gives() -> None:
    got = made(scaled, 7, CPU)
    assert got is not None
    host, placed = got
    assert equal(host, usual(scaled, 7, CPU)) and equal(placed, host)


def test_the_reference_s_copies_of_one_value_given_twice_are_its_own() -> None:
    def twice() -> list[Any]:
        x = torch.rand(1000)
        return [x, x]

    got = made(twice, 1, CPU)
    assert got is not None
    _host, placed = got
    assert placed[0].data_ptr() != placed[1].data_ptr()


GPU = torch.device("cuda", 0)


@pytest.mark.gpu
def test_on_a_gpu_what_get_inputs_computes_runs_there_and_lands_pinned() -> None:
    got = made(scaled, 7, GPU)
    assert got is not None
    host, placed = got
    assert all(t.device == CPU and t.is_pinned() for t in host[:2])
    assert all(t.device == GPU for t in placed[:2]) and host[2] == placed[2] == 3
    assert equal(host, placed) and equal(host, usual(scaled, 7, GPU))  # a product and a cast: exact on both


@pytest.mark.gpu
def test_on_a_gpu_one_value_given_twice_gives_the_reference_two_copies() -> None:
    def twice() -> list[Any]:
        x = torch.rand(1000)
        return [x, x[:10]]

    got = made(twice, 1, GPU)
    assert got is not None
    host, placed = got
    assert placed[0].untyped_storage().data_ptr() != placed[1].untyped_storage().data_ptr()
    assert equal(host, placed)


@pytest.mark.gpu
def test_on_a_gpu_a_draw_from_a_device_tensor_takes_the_private_generator() -> None:
    def masked() -> list[Any]:
        return [torch.empty(1000).fill_(0.5).to("cuda").bernoulli_() + torch.rand(1000)]

    draws = SeededDraws("p")
    first = DeviceInputs("p", draws, GPU).made(3, masked)
    again = DeviceInputs("p", draws, GPU).made(3, masked)
    assert first is not None and again is not None and equal(first[0], again[0])
    assert not draws.global_only


def numpy_scaled() -> list[Any]:
    x = torch.rand(1000)
    return [torch.from_numpy(x.numpy() * 2)]


def mixed() -> list[Any]:
    return [torch.rand(1000) + torch.ones(1000)]


def in_a_container() -> list[Any]:
    return [[torch.rand(1000)]]


@pytest.mark.gpu
@pytest.mark.parametrize("get_inputs", [numpy_scaled, mixed, in_a_container])
def test_on_a_gpu_a_problem_whose_code_cannot_take_device_tensors_is_drawn_the_usual_way(
        get_inputs: Callable[[], list[Any]]) -> None:
    inputs = DeviceInputs("p", SeededDraws("p"), GPU)
    assert made(get_inputs, 2, GPU, inputs) is None and not inputs.allowed
    assert made(get_inputs, 2, GPU, inputs) is None  # from then on, without trying
