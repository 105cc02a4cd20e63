"""The roofline floor a result records (docs/threats.md 8 and 20); roofline.py computes it.

A module of its own because the result holds one and roofline.py reads the request: both import this.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RooflineFloor:
    """The floor a result was checked against, recorded with it."""

    floor_ms: float
    compute_ms: float  # flops / compute peak / SAFETY
    memory_ms: float  # bytes / bandwidth / SAFETY
    device: str  # the table row used
    safety: float
    basis: str  # what the compute peak assumed (fp32, tf32, half)
