"""How long the child waits after a call before it fingerprints the outputs again.

Work finishing an output late takes about as long as computing it, so twice the reference's own time lets
it show. The bounds are the child's (run_child.MIN_SETTLE_S, MAX_SETTLE_S), repeated so the judge states
what it asks for.
"""

from __future__ import annotations

SETTLE_FACTOR = 2.0
MIN_SETTLE_S = 0.002
MAX_SETTLE_S = 1.0


def settle_s(reference_s: float) -> float:
    return min(max(SETTLE_FACTOR * reference_s, MIN_SETTLE_S), MAX_SETTLE_S)
