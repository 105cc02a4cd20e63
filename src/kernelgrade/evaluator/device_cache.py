"""A judge and its run child share one device, and each process's caching allocator keeps the memory it freed
for its own next allocation. Memory one of them keeps is memory the other cannot have: on a sweep of
KernelBench's largest problems, a judge that never gave it back held 128 of an H200's 140 GiB, and a run child
that had just timed a 6 GiB elementwise kernel held 55 of an H100's 80 GiB while its judge ran out timing the
reference. So each hands its unused cache back to the driver once it is done with the device for a while.
"""

from __future__ import annotations

import threading

import torch

from kernelgrade.evaluator import pinned_buffers

# Unused cache below this is kept: handing it back costs a device synchronize and cudaFree calls, and getting
# it again cudaMalloc calls, for every trial of a small problem; the other process misses 256 MiB on no problem
# that fits the device at all.
KEEP_CACHED_BYTES = 256 * 1024**2
# Pinned host memory newly made before the unused part of what torch's host allocator holds is handed back.
# Handing it back after every evaluation cost 0.16 s of cleanup per verdict on a KernelBench level 2 stream on an
# H200 (freeing pinned memory is slow, pinning it again slower: 0.25 s per 0.5 GiB), which ate much of what pinned
# inputs saved; a stream of one problem reuses its blocks and never gets here. 8 GiB is the blocks (two trials,
# three timing sets) of a few problems with 1 GiB inputs, or of dozens of typical ones.
KEEP_PINNED_BYTES = 8 * 1024**3


def allocated(device: torch.device) -> int:
    """What this process's tensors hold on `device` now; 0 off CUDA."""
    return int(torch.cuda.memory_allocated(device)) if device.type == "cuda" else 0


def peak_above(device: torch.device, base: int) -> int:
    """How far this process's allocations on `device` have peaked above `base` (an `allocated()` reading) since
    its peak was last reset, at each evaluation's start: an upper bound of what work begun at `base` took at
    its height, intermediate tensors included; 0 off CUDA."""
    return max(0, int(torch.cuda.max_memory_allocated(device)) - base) if device.type == "cuda" else 0


def leave_room(device: torch.device) -> int:
    """Hand this process's unused cached memory on `device` back to the driver (where it is more than
    KEEP_CACHED_BYTES), and return what is then free there for anyone; 0 off CUDA."""
    if device.type != "cuda":
        return 0
    if torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device) > KEEP_CACHED_BYTES:
        torch.cuda.empty_cache()
    free, _total = torch.cuda.mem_get_info(device)
    return int(free)


class _PinnedTally:
    """The bytes of the pinned blocks torch's caching host allocator made for this process's drawn inputs since it
    last handed its unused blocks back: what it holds unused is no more, give or take blocks torch pinned for
    itself. Its statistics of owned and active bytes were no help: on torch 2.11 owned minus active read 0 with a
    freed block cached. Its count of blocks made is: a request that raised it made one. Requests are made one at a
    time here, so that one thread's block is not counted for another's request too."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._bytes = 0

    def empty(self, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        """A new CPU tensor in pinned memory, its block counted where the allocator made one for it."""
        with self._lock:
            made = _blocks_made()
            tensor = torch.empty(shape, dtype=dtype, pin_memory=True)
            if made is None or _blocks_made() != made:
                self._bytes += _block_bytes(tensor.numel() * tensor.element_size())
            return tensor

    def take_if_over(self, limit: int) -> bool:
        """Whether blocks of more than `limit` bytes were made; if so, counting starts again."""
        with self._lock:
            over = self._bytes > limit
            self._bytes = 0 if over else self._bytes
            return over


PINNED = _PinnedTally()


def pinned_empty(shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    """A new CPU tensor in pinned memory from torch's caching host allocator, counted for release_pinned()."""
    return PINNED.empty(shape, dtype)


def _blocks_made() -> int | None:
    """How many blocks torch's caching host allocator has pinned so far; None where its statistics do not say."""
    made = torch.cuda.host_memory_stats().get("num_host_alloc")
    return None if made is None else int(made)


def _block_bytes(nbytes: int) -> int:
    """The block torch's caching host allocator makes for `nbytes`: the next power of two."""
    return 1 << max(0, nbytes - 1).bit_length()


def release_pinned() -> None:
    """Hand the pinned host memory no tensor uses back to the driver, once blocks of more than KEEP_PINNED_BYTES were
    made since the last time: torch's caching host allocator keeps every block it pinned for reuse, in power-of-two
    sizes, and a stream of problems of many sizes would otherwise keep the largest block of each size pinned for
    good. Called when an evaluation ends; within one, the trials reuse each other's blocks. The buffers of larger
    inputs (pinned_buffers.py) are trimmed to their pool's budget then too."""
    empty = getattr(torch._C, "_host_emptyCache", None)  # CUDA builds of torch 2.5 and later
    if empty is not None and PINNED.take_if_over(KEEP_PINNED_BYTES):
        empty()
    pinned_buffers.trim()
