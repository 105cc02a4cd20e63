"""Large random inputs and weights drawn on the judge's device a chunk at a time and handed over as CPU tensors.
Here the CPU stands in for the GPU (the same code with a CPU generator); the GPU tests draw on a real one."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
import torch

from kernelgrade.evaluator import device_cache, device_draws
from kernelgrade.evaluator.host.seeded_draws import SeededDraws
from kernelgrade.evaluator.wire import staging

CPU = torch.device("cpu")
M = TypeVar("M", bound=torch.nn.Module)


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
    assert all(t.device == CPU and t.is_pinned() for t in first)
    assert all(torch.equal(a, b) for a, b in zip(first, SeededDraws("p").run(5, get_inputs, on=gpu), strict=True))
    assert 0.49 < float(first[0].mean()) < 0.51 and 0.99 < float(first[1].std()) < 1.01


@pytest.mark.gpu
def test_pinned_blocks_made_are_counted_and_handed_back_past_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    gpu = torch.device("cuda", 0)
    tally = device_cache._PinnedTally()
    monkeypatch.setattr(device_cache, "PINNED", tally)
    drawn = SeededDraws("p").run(1, lambda: torch.rand(96 << 20), on=gpu)  # a new 512 MiB block
    assert drawn.is_pinned()
    del drawn
    again = SeededDraws("p").run(2, lambda: torch.rand(96 << 20), on=gpu)  # the same block, reused
    del again
    owned = torch.cuda.host_memory_stats()["allocations.current"]
    monkeypatch.setattr(device_cache, "KEEP_PINNED_BYTES", 512 << 20)
    device_cache.release_pinned()  # one 512 MiB block made: within the bound, kept for reuse
    assert torch.cuda.host_memory_stats()["allocations.current"] == owned
    monkeypatch.setattr(device_cache, "KEEP_PINNED_BYTES", (512 << 20) - 1)
    device_cache.release_pinned()
    assert torch.cuda.host_memory_stats()["allocations.current"] < owned
    assert not tally.take_if_over(0)  # counting started again


def test_off_a_gpu_inputs_are_drawn_into_pageable_memory() -> None:
    drawn = SeededDraws("p").run(1, lambda: torch.rand(1 << 20), on=None)
    assert not drawn.is_pinned()
    device_cache.release_pinned()  # nothing pinned, no CUDA: nothing to do


class Layers(torch.nn.Module):
    """Large and small weights drawn every way a constructor draws them: a layer's own init, nn.init, a direct
    in-place draw, a factory, and a generator of its own (which stays on the CPU, as it always drew)."""

    def __init__(self) -> None:
        super().__init__()
        self.large = torch.nn.Linear(30, 20)  # 600 weights: drawn on the device
        self.small = torch.nn.Linear(4, 4)
        self.xavier = torch.nn.Parameter(torch.empty(10, 10))
        torch.nn.init.xavier_normal_(self.xavier)
        self.direct = torch.nn.Parameter(torch.empty(70).uniform_(-1, 1))
        self.factory = torch.nn.Parameter(torch.randn(5))
        self.own = torch.nn.Parameter(torch.empty(80).normal_(generator=torch.Generator().manual_seed(9)))
        self.large_factory = torch.nn.Parameter(torch.randn(7, 10))  # 70 elements: drawn on the device


def as_the_run_child_constructs(make: Callable[[], M], seed: int, device: torch.device = CPU) -> M:
    torch.manual_seed(seed)
    with device_draws.weights_drawn(device, seed):
        return make()


def constructed_plainly(make: Callable[[], M], seed: int) -> M:
    torch.manual_seed(seed)
    return make()


@pytest.mark.parametrize("global_only", [False, True], ids=["private generator", "global generator"])
def test_the_judge_constructs_with_the_weights_the_run_child_draws(global_only: bool) -> None:
    draws = SeededDraws("p")
    draws.global_only = global_only
    before = torch.get_rng_state()
    judge = draws.run(4, Layers, weights_on=CPU)
    assert torch.equal(before, torch.get_rng_state())
    assert draws.global_only is global_only  # nothing reached the global generator behind the mode's back
    child, plain = as_the_run_child_constructs(Layers, 4), constructed_plainly(Layers, 4)
    for (name, ours), theirs, plainly in zip(judge.named_parameters(), child.parameters(), plain.parameters(),
                                             strict=True):
        assert torch.equal(ours, theirs), name
        # Here the CPU stands in for the GPU, and its generator gives a large draw what a plain draw gives: the
        # draws after it show that it did not advance the global generator.
        assert torch.equal(ours, plainly) is (name in {"large.weight", "own"}), name


def test_a_large_weight_is_drawn_whole_into_its_tensor_however_the_call_names_it() -> None:
    drawn = [torch.full((650,), math.nan) for _ in range(3)]
    forms = [lambda w: w.uniform_(2.0, 3.0), lambda w: torch.nn.init.uniform_(w, 2.0, 3.0),
             lambda w: torch.nn.init.uniform_(tensor=w, a=2.0, b=3.0)]
    for weight, form in zip(drawn, forms, strict=True):
        with device_draws.weights_drawn(CPU, 6):
            assert form(weight) is weight
    # A generator seeded alike, drawing the whole tensor at once: what the CPU standing in for the device gives.
    expected = torch.empty(650).uniform_(2.0, 3.0, generator=torch.Generator().manual_seed(6))
    assert all(torch.equal(weight, expected) for weight in drawn)


def test_a_large_factory_draw_is_drawn_whole_like_an_in_place_one_and_leaves_the_global_generator() -> None:
    before = torch.get_rng_state()
    with device_draws.weights_drawn(CPU, 6):
        drawn = torch.randn(7, 10, requires_grad=True)
        integers = torch.randint(3, 9, (70,))
    assert torch.equal(before, torch.get_rng_state())
    generator = torch.Generator().manual_seed(6)
    assert torch.equal(drawn, torch.empty(7, 10).normal_(generator=generator)) and drawn.requires_grad
    assert torch.equal(integers, torch.randint(3, 9, (70,), generator=generator))


def test_a_weight_it_does_not_draw_is_drawn_as_torch_draws_it() -> None:
    with device_draws.weights_drawn(CPU, 6):
        torch.manual_seed(1)
        strided, small = torch.empty(100, 10).t().uniform_(), torch.empty(10).uniform_()
        exponential = torch.empty(100).exponential_()
    torch.manual_seed(1)
    assert torch.equal(strided, torch.empty(100, 10).t().uniform_())
    assert torch.equal(small, torch.empty(10).uniform_()) and torch.equal(exponential, torch.empty(100).exponential_())


@pytest.mark.gpu
def test_on_a_gpu_the_judge_and_the_run_child_draw_large_weights_there_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(device_draws, "DEVICE_DRAW_MIN", 1 << 20)
    monkeypatch.setattr(staging, "STAGE_BYTES", 1 << 20)  # the 8 MiB weight crosses to the host in eight pieces
    gpu = torch.device("cuda", 0)

    def make() -> torch.nn.Module:
        return torch.nn.Sequential(torch.nn.Linear(2048, 1024), torch.nn.Linear(64, 64))

    judge = SeededDraws("p").run(3, make, weights_on=gpu)
    child, plain = as_the_run_child_constructs(make, 3, gpu), constructed_plainly(make, 3)
    assert all(torch.equal(a, b) for a, b in zip(judge.parameters(), child.parameters(), strict=True))
    weight = judge[0].weight.detach()
    assert weight.device == CPU and not torch.equal(weight, plain[0].weight)
    bound = 1 / math.sqrt(2048)  # Linear's own init, drawn on the GPU: its distribution, every piece filled
    assert float(weight.abs().max()) <= bound and float(weight.abs().mean()) > 0.45 * bound
    assert all(float(piece.std()) > 0.5 * bound for piece in weight.reshape(-1).split(1 << 18))


def _vma_flags(address: int) -> list[str]:
    """The VmFlags of the mapping of this process that holds `address` (/proc/self/smaps)."""
    inside = False
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            first = line.split()[0]
            if "-" in first and not first.endswith(":"):
                low, high = (int(end, 16) for end in first.split("-"))
                inside = low <= address < high
            elif inside and first == "VmFlags:":
                return line.split()[1:]
    raise AssertionError(f"no mapping holds {address:#x}")


def test_a_large_host_tensor_is_backed_with_huge_pages_where_the_kernel_leaves_them_to_madvise() -> None:
    modes = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    if not modes.exists() or "[never]" in modes.read_text():
        pytest.skip("this kernel gives no transparent huge pages")
    tensor = torch.empty(64 << 20, dtype=torch.uint8)  # glibc maps it on its own: nothing else shares its pages
    assert "hg" not in _vma_flags(tensor.data_ptr() + 8192)
    device_draws.back_with_huge_pages(tensor)
    assert "hg" in _vma_flags(tensor.data_ptr() + 8192)
    tensor.fill_(7)  # the values are the tensor's as before
    assert int(tensor.min()) == int(tensor.max()) == 7


def test_pinned_blocks_are_counted_in_powers_of_two() -> None:
    sizes = (1, 3 << 20, 4 << 20, (4 << 20) + 1)
    assert [device_cache._block_bytes(n) for n in sizes] == [1, 4 << 20, 4 << 20, 8 << 20]
    assert not device_cache._PinnedTally().take_if_over(0)  # nothing made yet
