"""The judge and its run child share one device. Memory that the judge's caching allocator keeps after an
oracle or a comparison is memory the child cannot have: on a sweep of KernelBench's largest problems a judge
that never gave it back held 128 of an H200's 140 GiB, and honest kernels ran out of memory in the child.
So the judge hands its unused cache back to the driver before the child needs room, and sizes its own
large allocations by what is free.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from kernelgrade.evaluator.compare import Comparison, Expected, compare_values
from kernelgrade.evaluator.compare_memory import MemoryBudget
from kernelgrade.evaluator.request import PrecisionPolicy

# Unused cache below this is kept: handing it back costs a device synchronize and cudaFree calls, and getting
# it again cudaMalloc calls, for every trial of a small problem; a child misses 256 MiB on no problem that
# fits the device at all.
KEEP_CACHED_BYTES = 256 * 1024**2
# The float64 oracle runs on the device when its inputs, weights and outputs take at most this share of what
# is free there: the activations inside forward() come on top and are not known beforehand.
ORACLE_SHARE = 0.5


def leave_room(device: torch.device) -> int:
    """Hand the judge's unused cached memory on `device` back to the driver (where it is more than
    KEEP_CACHED_BYTES), and return what is then free there for anyone; 0 off CUDA."""
    if device.type != "cuda":
        return 0
    if torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device) > KEEP_CACHED_BYTES:
        torch.cuda.empty_cache()
    free, _total = torch.cuda.mem_get_info(device)
    return int(free)


def compare_in_room(outputs: Sequence[Any], expected: Expected, policy: PrecisionPolicy,
                    device: torch.device) -> Comparison:
    """compare_values(), sized by what is free on the device; where the device runs out all the same (another
    process took memory after the plan), the judge hands back its cache and compares on the host in chunks:
    an out-of-memory of the judge's is never a kernel's verdict."""
    try:
        return compare_values(outputs, expected, policy)
    except torch.cuda.OutOfMemoryError:
        leave_room(device)
        return compare_values(outputs, expected, policy, MemoryBudget(device_bytes=0))
