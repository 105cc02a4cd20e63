"""Host memory registered with CUDA (page-locked in place), so that copies between it and a GPU are DMA copies
with no page faults: the shared region of a judge and its run child, and the pinned buffers of large inputs.

A registration the driver refuses (a limit on locked memory, a range some other mapping already registered) is
not an error: the memory still works, its copies are slower. The CUDA runtime keeps the refusal as the calling
thread's last error all the same, and torch reads that error after its next kernel launch in the thread and
raises it as the kernel's own ("part or all of the requested memory range is already mapped"), failing a trial
that had nothing to do with it. So a refusal is cleared here as soon as it is seen.
"""

from __future__ import annotations

import ctypes
import functools
import mmap
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch

# cudaHostRegisterPortable: pinned for every CUDA context of the process, not only the current device's.
_PORTABLE = 1
# madvise(2)'s MADV_POPULATE_WRITE (Linux 5.14): a range's page tables filled as writes would fill them, with
# nothing written.
_POPULATE_WRITE = 23
# Threads that fill a mapping's page tables before it is registered (prefaulted); a slice of a few GiB each at most
# for KernelBench's largest regions (12 GiB).
PREFAULT_THREADS = 8
# Each call holds the process's memory map (for reading) until it returns, and a thread that maps or unmaps memory
# meanwhile waits, and the faults of every thread after it with it: calls of a few milliseconds, not one per slice.
# On an H200 host, eight threads filled a 12 GiB region's page tables in 2.0-2.3 s with one call each and in
# 0.6-0.7 s with calls of 16 MiB.
PREFAULT_CALL_BYTES = 16 * 1024 * 1024


def register_pinned(address: int, nbytes: int) -> bool:
    """Pins host memory for every CUDA context of the process; False where registration is refused."""
    refused = int(torch.cuda.cudart().cudaHostRegister(address, nbytes, _PORTABLE))  # type: ignore[no-untyped-call]
    if refused:
        _clear_last_error()
    return not refused


def prefaulted(address: int, nbytes: int, threads: int = PREFAULT_THREADS) -> bool:
    """Fills the page tables of the mapping at `address` (page-aligned) from `threads` threads at once, leaving its
    contents as they are; False where the kernel cannot (before Linux 5.14), which leaves the faults to the
    registration. Why: cudaHostRegister puts a mapping's pages in its page tables from the one calling thread, even
    where the file holds them already (3 million 4 KiB pages of shared memory for 12 GiB). On an H200 host a 12 GiB
    region given its pages by fallocate took 4.0-5.8 s to register (five runs), against 0.6-0.7 s to fill its page
    tables from eight threads and 0.5-0.6 s to register after that (two runs)."""
    if nbytes <= 0:
        return True
    step = -(-nbytes // max(1, threads) // mmap.PAGESIZE) * mmap.PAGESIZE
    slices = [(address + start, min(step, nbytes - start)) for start in range(0, nbytes, step)]

    def populate(piece: tuple[int, int]) -> bool:  # ctypes releases the GIL for each call
        start, size = piece
        for offset in range(0, size, PREFAULT_CALL_BYTES):
            length = min(PREFAULT_CALL_BYTES, size - offset)
            if int(libc().madvise(ctypes.c_void_p(start + offset), ctypes.c_size_t(length), _POPULATE_WRITE)):
                return False
        return True

    with ThreadPoolExecutor(len(slices), thread_name_prefix="prefault") as executor:
        return all(list(executor.map(populate, slices)))


def unregister_pinned(address: int) -> None:
    if int(torch.cuda.cudart().cudaHostUnregister(address)):  # type: ignore[no-untyped-call]
        _clear_last_error()


def address_of(memory: mmap.mmap) -> int:
    """The mapping's address. The ctypes object that reads it is dropped at once: while it lived, the mapping
    would refuse to close."""
    first = ctypes.c_char.from_buffer(memory)
    try:
        return ctypes.addressof(first)
    finally:
        del first


def _clear_last_error() -> None:
    """Reads, and so resets, the calling thread's last CUDA runtime error (torch binds no call that does). Where
    the runtime cannot be found, torch's next check in this thread raises the refusal; nothing else is lost."""
    runtime = _runtime()
    if runtime is not None:
        runtime.cudaGetLastError()


@functools.cache
def libc() -> ctypes.CDLL:
    """The process's C library, for the memory advice ctypes calls without the GIL (madvise)."""
    return ctypes.CDLL(None, use_errno=True)


@functools.cache
def _runtime() -> ctypes.CDLL | None:
    """The CUDA runtime library torch loaded (opening it again gives the same library and its state); None where
    the process holds none of its own (a runtime linked into torch's library)."""
    for line in Path("/proc/self/maps").read_text().splitlines():
        fields = line.split(maxsplit=5)  # address, perms, offset, dev, inode, and the file where one is mapped
        if len(fields) == 6 and os.path.basename(fields[5]).startswith("libcudart.so"):
            return ctypes.CDLL(fields[5])
    return None
