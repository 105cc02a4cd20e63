"""Cross-checks of the child's timing claims against what the judge observed itself (THREATS.md 1-5, 14)."""

from __future__ import annotations

import statistics

from kernelgrade.evaluator.result import Finding, Severity
from kernelgrade.evaluator.session import Integrity, TimedReply

# Host-side slack per rep beyond the reference's own: launch latency and scheduler noise on a busy host.
WALL_GAP_SLACK_MS = 0.5
# The timed phase's fixed cost outside the reps (allocating the flush buffer, one reply) is well under this.
OUTER_SETUP_SLACK_MS = 250.0
# Speedups above this are rare enough that a person should look before they are believed (THREATS.md 20).
REVIEW_SPEEDUP = 10.0


def timing_findings(candidate: TimedReply, reference_wall_gap_ms: float, reference_outer_gap_ms: float
                    ) -> list[Finding]:
    findings = []
    gaps = [w - d for w, d in zip(candidate.wall_ms, candidate.device_ms, strict=True)]
    median_wall = statistics.median(candidate.wall_ms)
    excess = statistics.median(gaps) - reference_wall_gap_ms
    if excess > max(WALL_GAP_SLACK_MS, 0.2 * median_wall):
        findings.append(Finding("work_outside_timed_stream", Severity.FLAG,
            f"each call's device-wide wall time ({median_wall:.3f} ms median) exceeds its event time by"
            f" {excess:.3f} ms more than the reference's: work ran on another stream or thread after the end"
            " event, so the event time understates the kernel."))
    outer_gap = candidate.outer_seconds * 1000.0 - sum(candidate.wall_ms)
    allowed = 2.0 * max(reference_outer_gap_ms, 0.0) + OUTER_SETUP_SLACK_MS
    if outer_gap > allowed and outer_gap > 0.25 * sum(candidate.wall_ms):
        findings.append(Finding("timing_inconsistent", Severity.FLAG,
            f"the judge's own clock saw the timed phase take {candidate.outer_seconds * 1000:.1f} ms but the"
            f" child reported {sum(candidate.wall_ms):.1f} ms of reps; {outer_gap:.1f} ms are unaccounted for"
            " (a patched clock or work hidden between reps)."))
    return findings + integrity_findings(candidate.integrity)


def integrity_findings(integrity: Integrity) -> list[Finding]:
    findings = []
    if integrity.replaced_functions:
        findings.append(Finding("timer_patched", Severity.FLAG,
            "the submission replaced harness functions: " + ", ".join(integrity.replaced_functions)))
    if integrity.precision_flags_changed:
        findings.append(Finding("precision_flags_changed", Severity.FLAG,
            "the submission changed global precision settings: " + ", ".join(integrity.precision_flags_changed)))
    if integrity.extra_threads > 0:
        findings.append(Finding("background_threads", Severity.REVIEW,
            f"{integrity.extra_threads} thread(s) appeared during the calls"))
    return findings


def speedup_findings(speedup: float | None) -> list[Finding]:
    if speedup is not None and speedup > REVIEW_SPEEDUP:
        return [Finding("speedup_review", Severity.REVIEW,
                        f"speedup {speedup:.1f}x is above {REVIEW_SPEEDUP:g}x; marked for review")]
    return []
