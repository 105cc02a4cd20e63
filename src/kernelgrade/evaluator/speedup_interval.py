"""The speedup's 95 % interval, from the two medians' intervals, and the finding for a speedup too imprecise to
rank a kernel by (docs/timing.md, What is reported).

Each side's median carries a distribution-free 95 % interval (timing.summarize). The fastest the reference may be
(its interval's low end) over the slowest the candidate may be (its high end) bounds the speedup from below, and
the reverse from above: a conservative interval, the one the API and the leaderboard pages show (the formula is
kernelgrade/speedup_bounds.py, which both import).
"""

from __future__ import annotations

from kernelgrade.evaluator.result import Finding, Severity, TimingStats
from kernelgrade.speedup_bounds import speedup_bounds as bounds_of

# The widest interval, as its high bound over its low, that a speedup is reported without comment. Each median
# stops at a 1 % interval where its caps allow: on an H200, nine KernelBench level 2 references against themselves
# spanned 1.000-1.012x. On a quiet 2-core CPU host the tests' short loops spanned 1.02-1.21x; with four spinning
# processes on the same two cores they spanned 3.6-37x, and a kernel measured at 0.03-0.08x quiet came out at
# 0.45-1.10x.
IMPRECISE_SPAN = 1.5


def speedup_bounds(reference: TimingStats | None, candidate: TimingStats | None) -> tuple[float, float] | None:
    """(low, high) of reference / candidate; None without both sides or with a candidate interval at 0."""
    if reference is None or candidate is None:
        return None
    return bounds_of(reference.ci95_low_ms, reference.ci95_high_ms, candidate.ci95_low_ms, candidate.ci95_high_ms)


def imprecision_findings(reference: TimingStats | None, candidate: TimingStats | None) -> list[Finding]:
    """`timing_imprecise` (review) where the speedup's interval spans more than IMPRECISE_SPAN: the verdict
    stands, the speedup is not worth ranking by."""
    if reference is None or candidate is None:
        return []
    bounds = speedup_bounds(reference, candidate)
    if bounds is None or bounds[1] <= IMPRECISE_SPAN * bounds[0]:
        return []
    low, high = bounds
    return [Finding("timing_imprecise", Severity.REVIEW,
        f"the speedup's 95 % interval is {low:.3g}x to {high:.3g}x: the reference's median lies in"
        f" {reference.ci95_low_ms:.4g}-{reference.ci95_high_ms:.4g} ms and the candidate's in"
        f" {candidate.ci95_low_ms:.4g}-{candidate.ci95_high_ms:.4g} ms. The times varied too much for the speedup"
        " to rank this kernel, as they do on a host busy with other work. The verdict stands; grade it again on"
        " a quiet host for a speedup to rely on.")]
