"""Pinned host buffers of exact sizes for drawn inputs past torch's caching host allocator, reused from one trial to
the next.

torch's host allocator pins whole powers of two, so an input over 1 GiB is not drawn into its blocks
(device_draws.PINNED_INPUT_MAX_BYTES); it used to go to fresh pageable memory instead. On an H200 host a 6 GiB
draw then cost about 3 s: its pages faulted in on first touch (1.9 s to copy 6 GiB back from the device into fresh
pageable memory, 0.34 s into memory touched before), and it crossed to the device again at 0.67 s. KernelBench's
level 1 softmax (4096 x 393216) spent 37 of its 57 device seconds per verdict waiting for its trials' inputs.

A buffer here is an anonymous mapping of the input's exact size, backed by huge pages where the kernel allows and
registered with CUDA: 6 GiB crosses in 0.12 s either way, and the mapping and registering (1.7 s for 6 GiB) are
paid when a buffer is first made, not at every draw. A buffer goes back to the pool when the last tensor that views
it is gone (a finalizer on the memoryview its storage holds), and the next draw of that size takes it again: a
problem's trials and timing sets share a few buffers. When an evaluation ends, free buffers past the pool's
budget are unregistered and unmapped, the least recently freed first (`trim`).
"""

from __future__ import annotations

import ctypes
import math
import mmap
import os
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import torch

from kernelgrade.evaluator.wire.pinning import address_of, register_pinned, unregister_pinned

# Huge pages: fewer faults and page-table entries for a buffer of gigabytes. Not inherited by a fork: Linux copies
# private pages pinned for DMA into a forked process at once rather than sharing them copy-on-write, so a run
# child's start that forked before it exec'd could copy the whole pool, and nothing forked needs it.
_ADVICE = ("MADV_HUGEPAGE", "MADV_DONTFORK")


@dataclass(frozen=True)
class Registrar:
    """How a buffer's memory is pinned: `register(address, nbytes)` returns whether it was, `unregister(address)`
    undoes it."""

    register: Callable[[int, int], bool]
    unregister: Callable[[int], None]


# Portable: pinned for every CUDA context of the process, as judges of several GPUs share one (as a shared region).
CUDA = Registrar(register_pinned, unregister_pinned)

# Threads that put a new buffer's pages in place before it is registered. cudaHostRegister faults a fresh mapping
# in from the one calling thread: on an H200 host a new 6 GiB buffer took 0.91 s to make registered fresh and
# 0.42 s with 8 threads touching its pages first (bench/host_transfers.py, one run). Each thread takes its pages'
# faults one at a time, so that the judge's other threads can still map memory meanwhile (a populate call would
# hold the process's memory map for the whole slice).
TOUCH_THREADS = 8


@dataclass(frozen=True)
class _Buffer:
    memory: mmap.mmap
    address: int

    @property
    def nbytes(self) -> int:
        return len(self.memory)


class PinnedBuffers:
    """The pool. Safe to use from several threads: a buffer may come back in whichever thread drops its last view,
    and a garbage collection may do that while this thread holds the lock (hence a reentrant one)."""

    def __init__(self, keep_bytes: int, registrar: Registrar = CUDA, touch_threads: int = TOUCH_THREADS) -> None:
        """`touch_threads`: threads that touch a new buffer's pages before it is registered (0: none)."""
        self.keep_bytes = keep_bytes
        self._registrar = registrar
        self._touch_threads = touch_threads
        self._lock = threading.RLock()
        self._free: list[_Buffer] = []  # least recently freed first
        self.made = 0  # buffers mapped and registered so far
        self.made_bytes = 0
        self.lent_bytes = 0  # in buffers handed out and not yet back
        self.peak_lent_bytes = 0  # the most lent at once since reset_peak()

    def empty(self, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor | None:
        """A CPU tensor of `shape` and `dtype` in a pinned buffer of exactly its size, free or new; None where
        the memory could not be pinned (a limit on locked memory)."""
        nbytes = math.prod(shape) * dtype.itemsize
        buffer = self._take(nbytes) or self._made(nbytes)
        if buffer is None:
            return None
        with self._lock:
            self.lent_bytes += nbytes
            self.peak_lent_bytes = max(self.peak_lent_bytes, self.lent_bytes)
        view = memoryview(buffer.memory)
        weakref.finalize(view, self._give_back, buffer)
        return torch.frombuffer(view, dtype=torch.uint8).view(dtype).view(shape)

    def reset_peak(self) -> None:
        with self._lock:
            self.peak_lent_bytes = self.lent_bytes

    def free_bytes(self) -> int:
        with self._lock:
            return sum(buffer.nbytes for buffer in self._free)

    def trim(self) -> None:
        """Unpin and unmap free buffers, the least recently freed first, until those left fit `keep_bytes`."""
        with self._lock:
            while self._free and self.free_bytes() > self.keep_bytes:
                self._unmade(self._free.pop(0))

    def _take(self, nbytes: int) -> _Buffer | None:
        with self._lock:
            for index, buffer in enumerate(self._free):
                if buffer.nbytes == nbytes:
                    return self._free.pop(index)
        return None

    def _made(self, nbytes: int) -> _Buffer | None:
        memory = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        for name in _ADVICE:
            advice = getattr(mmap, name, None)
            if advice is not None:
                memory.madvise(advice)
        buffer = _Buffer(memory, address_of(memory))
        if self._touch_threads:
            touched(buffer.address, nbytes, self._touch_threads)
        if not self._registrar.register(buffer.address, nbytes):
            memory.close()
            return None
        with self._lock:
            self.made += 1
            self.made_bytes += nbytes
        return buffer

    def _give_back(self, buffer: _Buffer) -> None:
        with self._lock:
            self._free.append(buffer)
            self.lent_bytes -= buffer.nbytes

    def _unmade(self, buffer: _Buffer) -> None:
        self._registrar.unregister(buffer.address)
        buffer.memory.close()


def touched(address: int, nbytes: int, threads: int) -> None:
    """Writes zeros over `nbytes` at `address`, `threads` slices at once: a fresh mapping's pages put in place
    (ctypes releases the GIL in memset)."""
    if nbytes <= 0:
        return
    step = -(-nbytes // max(1, threads))
    slices = [(address + start, min(step, nbytes - start)) for start in range(0, nbytes, step)]
    with ThreadPoolExecutor(len(slices), thread_name_prefix="pinned-touch") as executor:
        list(executor.map(lambda piece: ctypes.memset(piece[0], 0, piece[1]), slices))


def keep_bytes_for(host_bytes: int, devices: int) -> int:
    """What a process keeps free between evaluations: enough for one evaluation of KernelBench's largest inputs (two
    trials and three timing sets of 6 GiB: 32 GiB), so that a stream of such a problem pins nothing again, but over
    all the GPUs' judges of a host no more than a quarter of its memory, which pinned pages take from everything
    else for as long as they are kept."""
    return min(32 * 1024**3, host_bytes // (4 * max(1, devices)))


def _host_bytes() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


_POOL: PinnedBuffers | None = None
_POOL_LOCK = threading.Lock()


def pool() -> PinnedBuffers:
    """This process's pool, made on first use (it asks how many GPUs the host has)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = PinnedBuffers(keep_bytes_for(_host_bytes(), torch.cuda.device_count()))
        return _POOL


def trim() -> None:
    """Trim this process's pool, where one was made."""
    if _POOL is not None:
        _POOL.trim()
