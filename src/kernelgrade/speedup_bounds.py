"""The bounds of a speedup whose two medians are each known within a 95 % interval: the one formula the
evaluator's `timing_imprecise` finding, the API and the pages all read (evaluator/speedup_interval.py,
service/stored_result.py). Plain floats in and out, so that both sides import it: the evaluator without the
service's pydantic, the service without torch.
"""

from __future__ import annotations


def speedup_bounds(reference_low_ms: float, reference_high_ms: float, candidate_low_ms: float,
                   candidate_high_ms: float) -> tuple[float, float] | None:
    """(low, high) of reference / candidate: the fastest the reference may be over the slowest the candidate may
    be bounds it from below, and the reverse from above; None where the candidate's interval reaches 0."""
    if candidate_low_ms <= 0 or candidate_high_ms <= 0:
        return None
    return reference_low_ms / candidate_high_ms, reference_high_ms / candidate_low_ms
