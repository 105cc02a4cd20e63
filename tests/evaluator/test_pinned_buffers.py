"""Pinned host buffers of exact sizes for large drawn inputs: handed out as tensors, back in the pool when the last
view is gone, reused by the next draw of the size, trimmed to the budget. On the CPU a recording registrar stands
in for cudaHostRegister; the GPU test draws through a real one."""

from __future__ import annotations

import ctypes
import gc
import os
from pathlib import Path

import pytest
import torch

from kernelgrade.evaluator import device_draws, pinned_buffers
from kernelgrade.evaluator.host.seeded_draws import SeededDraws
from kernelgrade.evaluator.pinned_buffers import PinnedBuffers, Registrar, keep_bytes_for

MiB = 1024**2


class Recorder:
    def __init__(self, refuse: bool = False) -> None:
        self.refuse = refuse
        self.registered: dict[int, int] = {}
        self.unregistered: list[int] = []

    def registrar(self) -> Registrar:
        return Registrar(self.register, self.unregistered.append)

    def register(self, address: int, nbytes: int) -> bool:
        if not self.refuse:
            self.registered[address] = nbytes
        return not self.refuse


def test_a_buffer_comes_back_when_its_last_view_is_gone_and_is_taken_again() -> None:
    recorder = Recorder()
    pool = PinnedBuffers(keep_bytes=64 * MiB, registrar=recorder.registrar())
    tensor = pool.empty((256, 1024), torch.float32)
    assert tensor is not None and tensor.shape == (256, 1024) and tensor.dtype == torch.float32
    tensor.fill_(2.0)
    address = tensor.data_ptr()
    assert recorder.registered == {address: MiB}
    row = tensor[3]
    del tensor
    gc.collect()
    assert pool.free_bytes() == 0  # a view still uses it
    assert float(row.sum()) == 2048.0
    del row
    assert pool.free_bytes() == MiB
    again = pool.empty((1024, 256), torch.float32)
    assert again is not None and again.data_ptr() == address and pool.made == 1
    other = pool.empty((1024, 1024), torch.uint8)  # another size: a buffer of its own
    assert other is not None and other.data_ptr() != address and pool.made == 2


def test_the_pool_counts_what_it_made_and_the_most_it_lent_at_once() -> None:
    pool = PinnedBuffers(keep_bytes=64 * MiB, registrar=Recorder().registrar())
    first = pool.empty((MiB,), torch.uint8)
    second = pool.empty((2 * MiB,), torch.uint8)
    assert (pool.made, pool.made_bytes, pool.lent_bytes, pool.peak_lent_bytes) == (2, 3 * MiB, 3 * MiB, 3 * MiB)
    del first, second
    pool.reset_peak()
    assert (pool.lent_bytes, pool.peak_lent_bytes) == (0, 0)
    again = pool.empty((MiB,), torch.uint8)
    assert (pool.made, pool.lent_bytes, pool.peak_lent_bytes) == (2, MiB, MiB)
    del again


@pytest.mark.parametrize("threads", [0, 3])
def test_a_new_buffer_s_pages_are_in_place_before_it_is_registered_where_threads_touch_them(threads: int) -> None:
    resident_at_registration: list[int] = []

    def register(address: int, nbytes: int) -> bool:
        resident_at_registration.append(_resident_bytes(address, nbytes))
        return True

    pool = PinnedBuffers(keep_bytes=0, registrar=Registrar(register, lambda _address: None), touch_threads=threads)
    tensor = pool.empty((8 * MiB + 4096,), torch.uint8)
    assert tensor is not None and int(tensor.sum()) == 0
    assert resident_at_registration == [8 * MiB + 4096 if threads else 0]


def _resident_bytes(address: int, nbytes: int) -> int:
    """How many of the pages at `address` are in memory (mincore(2))."""
    page = os.sysconf("SC_PAGE_SIZE")
    pages = -(-nbytes // page)
    vector = (ctypes.c_ubyte * pages)()
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.mincore(ctypes.c_void_p(address), ctypes.c_size_t(nbytes), vector) == 0, ctypes.get_errno()
    return min(nbytes, sum(flag & 1 for flag in vector) * page)


def test_trim_unpins_the_least_recently_freed_past_the_budget() -> None:
    recorder = Recorder()
    pool = PinnedBuffers(keep_bytes=3 * MiB, registrar=recorder.registrar())
    first, second, third = (pool.empty((size * MiB,), torch.uint8) for size in (1, 2, 3))
    assert first is not None and second is not None and third is not None
    addresses = [t.data_ptr() for t in (first, second, third)]
    del first, second, third  # freed in that order
    assert pool.free_bytes() == 6 * MiB
    pool.trim()
    assert recorder.unregistered == addresses[:2]  # 1 and 2 MiB go; the 3 MiB freed last fit the budget
    assert pool.free_bytes() == 3 * MiB


def test_a_forked_process_does_not_get_the_buffers() -> None:
    """A fork would otherwise copy pinned pages at once: the buffers are not mapped in the forked child at all."""
    pool = PinnedBuffers(keep_bytes=64 * MiB, registrar=Recorder().registrar())
    tensor = pool.empty((4 * MiB,), torch.uint8)
    assert tensor is not None
    start = f"{tensor.data_ptr():x}-"
    assert any(line.startswith(start) for line in Path("/proc/self/maps").read_text().splitlines())
    pid = os.fork()
    if pid == 0:
        mapped = any(line.startswith(start) for line in Path("/proc/self/maps").read_text().splitlines())
        os._exit(1 if mapped else 0)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_refused_registration_gives_nothing() -> None:
    pool = PinnedBuffers(keep_bytes=64 * MiB, registrar=Recorder(refuse=True).registrar())
    assert pool.empty((MiB,), torch.uint8) is None
    assert pool.made == 0 and pool.free_bytes() == 0


def test_the_budget_is_one_evaluation_of_the_largest_inputs_within_a_quarter_of_the_host() -> None:
    GiB = 1024**3
    assert keep_bytes_for(128 * GiB, 1) == 32 * GiB
    assert keep_bytes_for(560 * GiB, 8) == 17 * GiB + GiB // 2
    assert keep_bytes_for(64 * GiB, 0) == 16 * GiB


@pytest.mark.gpu
def test_inputs_past_the_allocators_bound_are_drawn_into_the_pools_buffers(monkeypatch: pytest.MonkeyPatch) -> None:
    gpu = torch.device("cuda", 0)
    monkeypatch.setattr(device_draws, "PINNED_INPUT_MAX_BYTES", 8 * MiB - 1)
    pool = PinnedBuffers(keep_bytes=64 * MiB)
    monkeypatch.setattr(pinned_buffers, "_POOL", pool)
    first = SeededDraws("p").run(1, lambda: torch.rand(2 * MiB), on=gpu)  # 8 MiB: past the bound
    assert first.is_pinned() and pool.made == 1
    values, address = first.clone(), first.data_ptr()
    del first
    again = SeededDraws("p").run(1, lambda: torch.rand(2 * MiB), on=gpu)
    assert again.data_ptr() == address and pool.made == 1 and torch.equal(again, values)
    # 4 MiB, the smallest draw made on the device: within the bound, a block of torch's allocator
    small = SeededDraws("p").run(1, lambda: torch.rand(MiB), on=gpu)
    assert small.is_pinned() and pool.made == 1
