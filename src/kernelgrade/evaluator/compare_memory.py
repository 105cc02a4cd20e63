"""How much memory comparing one output takes, and how many of its elements to compare at a time.

Pure arithmetic: compare.py asks the device what is free and passes the figure in. The counts are of what
compare.py's whole-tensor expressions hold at their peak, per output element, besides the output, the
reference and the oracle themselves (already resident when the comparison starts).
"""

from __future__ import annotations

from dataclasses import dataclass

FLOAT64 = 8
# The fp32 and tf32 policies at their peak: the candidate and reference as float64 (2), a copy with non-finite
# positions zeroed while it is made and the oracle's (2, only where the reference has NaN or Inf),
# |out - oracle|, the elementwise scale and bound (3), the temporaries of a division (2) or of an emulation as
# float64 and its difference (2); plus five boolean masks: 9 float64 values and 5 bytes. The plan keeps the 14
# float64 values the comparison held before it reused its own temporaries in place (compare_elements.py):
# the margin is the allocator's, whose blocks round up, and an out-of-memory here costs a comparison on the host.
ORACLE_BYTES_PER_ELEMENT = 14 * FLOAT64
# The tolerance policy: the float64 pair and its zeroed copies (4), |out - ref|, |ref|, rtol x |ref|, the
# sum with atol and the worst-index key (5), three masks. 9 float64 values and 3 bytes, rounded up to 10.
TOLERANCE_BYTES_PER_ELEMENT = 10 * FLOAT64
# Integers and booleans are compared with torch.equal, which makes no copy.
EXACT_BYTES_PER_ELEMENT = 0
# Only this share of the free memory is planned for: the caching allocator rounds blocks up and cannot
# always join free ones, and the judge's other threads (the next trial's inputs) allocate meanwhile.
USABLE_SHARE = 0.5
# Below this many elements per chunk the per-chunk overhead (a dozen kernel launches, a device-to-host
# read of each partial result) outweighs the arithmetic; a device with less room than this compares on the
# host instead. 1 Mi elements is 112 MiB of float64 temporaries.
MIN_CHUNK_ELEMENTS = 1 << 20


@dataclass(frozen=True)
class ChunkPlan:
    """How to compare an output of `numel` elements: `elements` at a time, on the host where the device
    has no room for even a minimal chunk."""

    numel: int
    elements: int
    on_host: bool = False

    @property
    def whole(self) -> bool:
        """One chunk on the output's own device: the plain whole-tensor comparison."""
        return self.elements >= self.numel and not self.on_host

    @property
    def chunks(self) -> int:
        return max(1, -(-self.numel // self.elements))


def bytes_per_element(exact: bool, has_oracle: bool) -> int:
    """The comparison's temporaries per output element: `exact` for integer and boolean outputs,
    `has_oracle` where the fp32 or tf32 policy compares against a float64 oracle."""
    if exact:
        return EXACT_BYTES_PER_ELEMENT
    return ORACLE_BYTES_PER_ELEMENT if has_oracle else TOLERANCE_BYTES_PER_ELEMENT


@dataclass(frozen=True)
class MemoryBudget:
    """What one comparison may use: bytes free on the output's device and on the host (None: ask them).
    Tests lower these, and `min_chunk`, to drive the chunked path with small outputs."""

    device_bytes: int | None = None
    host_bytes: int | None = None
    min_chunk: int = MIN_CHUNK_ELEMENTS


def plan_chunks(numel: int, per_element: int, device_free: int, host_free: int,
                min_chunk: int = MIN_CHUNK_ELEMENTS) -> ChunkPlan:
    """The whole output where its temporaries fit the usable share of `device_free`; else the largest chunk
    that does; else, where not even `min_chunk` elements fit, chunks on the host sized from `host_free`
    (never below `min_chunk`: the host swaps rather than fails)."""
    if per_element == 0 or numel == 0:
        return ChunkPlan(numel, max(numel, 1))
    fitting = int(device_free * USABLE_SHARE) // per_element
    if fitting >= numel:
        return ChunkPlan(numel, numel)
    if fitting >= min_chunk:
        return ChunkPlan(numel, fitting)
    on_host = max(min_chunk, int(host_free * USABLE_SHARE) // per_element)
    return ChunkPlan(numel, min(numel, on_host), on_host=True)

