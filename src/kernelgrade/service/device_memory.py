"""The device classes the problem catalogue checks problems against, with the memory a judge has on each:
the classes judges have reported (worker/judges.py measures its card), and these well-known ones besides."""

from __future__ import annotations

from collections.abc import Mapping

GiB = 1024**3

# What a judge can allocate on one card of each class: the card's memory as CUDA reports it (79.1 GiB on an
# H100 80GB, 139.8 GiB on an H200, 22.2 GiB on an L4) less about a gigabyte for the CUDA context, cuBLAS and
# cuDNN workspaces and the timing loop's L2 flush buffer.
DEVICE_MEMORY_BYTES: dict[str, int] = {
    "cuda-h100": 78 * GiB,
    "cuda-h200": 138 * GiB,
    "cuda-l4": 21 * GiB,
}


def with_reported(reported: Mapping[str, int]) -> dict[str, int]:
    """The known classes with what judges reported on top: a judge's own measure wins over the table's."""
    return {**DEVICE_MEMORY_BYTES, **reported}
