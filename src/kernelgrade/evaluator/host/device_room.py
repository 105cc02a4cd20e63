"""The judge's side of sharing one device with its run child (device_cache.py): it hands its unused cache back
before the child needs room, and sizes its own large allocations by what is free.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from kernelgrade.evaluator.compare import Comparison, Expected, compare_values
from kernelgrade.evaluator.compare_elements import device_free_bytes
from kernelgrade.evaluator.compare_memory import USABLE_SHARE, MemoryBudget
from kernelgrade.evaluator.device_cache import leave_room
from kernelgrade.evaluator.request import PrecisionPolicy
from kernelgrade.evaluator.wire import tensorfile
from kernelgrade.evaluator.wire.shared_region import SharedRegion

# The float64 oracle runs on the device when its inputs, weights and outputs take at most this share of what
# is free there: the activations inside forward() come on top and are not known beforehand.
ORACLE_SHARE = 0.5
# What a child's shared region holds beside the outputs' bytes, for the header that describes them: a few hundred
# outputs' entries. A header larger than that sends the outputs to the file instead.
HEADER_ROOM = 64 * 1024


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


def read_outputs(path: Path, device: torch.device, outputs_bytes: int) -> list[Any]:
    """A file of a run child's outputs (a checked call's, or a timed rep's for the re-check), read where
    _outputs_device puts them. A file larger than `outputs_bytes` and the largest header is not what the harness
    writes: tensorfile.TensorFileError, before anything is read."""
    return tensorfile.load(path, _outputs_device(device, outputs_bytes), max_bytes=_most_bytes(outputs_bytes))


def read_region(region: SharedRegion, end: int, device: torch.device, outputs_bytes: int, start: int = 0
                ) -> list[Any]:
    """A run child's outputs in bytes `start` to `end` of its shared region, read as read_outputs() reads a
    file."""
    view = region.view(end) if 0 <= start <= end else None
    if view is None:
        raise tensorfile.TensorFileError(f"the child reports bytes {start} to {end} of a region of {region.reserved}")
    return tensorfile.load_from_memory(view[start:], _outputs_device(device, outputs_bytes),
                                       max_bytes=_most_bytes(outputs_bytes))


def _most_bytes(outputs_bytes: int) -> int:
    """The most the harness writes for outputs of `outputs_bytes`: those, the length word and the largest header."""
    return outputs_bytes + 8 + tensorfile.MAX_HEADER_BYTES


def _outputs_device(device: torch.device, outputs_bytes: int) -> torch.device:
    """The judge's device where the outputs fit in what is free there beside the comparison's chunks, else the
    host, from which the comparison moves them to the device a chunk at a time (compare_memory.py)."""
    free = device_free_bytes(device, MemoryBudget())
    return device if outputs_bytes <= free * USABLE_SHARE else torch.device("cpu")
