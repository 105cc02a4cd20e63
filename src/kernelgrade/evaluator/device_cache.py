"""A judge and its run child share one device, and each process's caching allocator keeps the memory it freed
for its own next allocation. Memory one of them keeps is memory the other cannot have: on a sweep of
KernelBench's largest problems, a judge that never gave it back held 128 of an H200's 140 GiB, and a run child
that had just timed a 6 GiB elementwise kernel held 55 of an H100's 80 GiB while its judge ran out timing the
reference. So each hands its unused cache back to the driver once it is done with the device for a while.
"""

from __future__ import annotations

import torch

# Unused cache below this is kept: handing it back costs a device synchronize and cudaFree calls, and getting
# it again cudaMalloc calls, for every trial of a small problem; the other process misses 256 MiB on no problem
# that fits the device at all.
KEEP_CACHED_BYTES = 256 * 1024**2


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
