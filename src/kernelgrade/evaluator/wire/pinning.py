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
from pathlib import Path

import torch

# cudaHostRegisterPortable: pinned for every CUDA context of the process, not only the current device's.
_PORTABLE = 1


def register_pinned(address: int, nbytes: int) -> bool:
    """Pins host memory for every CUDA context of the process; False where registration is refused."""
    refused = int(torch.cuda.cudart().cudaHostRegister(address, nbytes, _PORTABLE))  # type: ignore[no-untyped-call]
    if refused:
        _clear_last_error()
    return not refused


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
def _runtime() -> ctypes.CDLL | None:
    """The CUDA runtime library torch loaded (opening it again gives the same library and its state); None where
    the process holds none of its own (a runtime linked into torch's library)."""
    for line in Path("/proc/self/maps").read_text().splitlines():
        fields = line.split(maxsplit=5)  # address, perms, offset, dev, inode, and the file where one is mapped
        if len(fields) == 6 and os.path.basename(fields[5]).startswith("libcudart.so"):
            return ctypes.CDLL(fields[5])
    return None
