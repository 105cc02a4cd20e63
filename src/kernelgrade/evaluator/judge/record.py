"""What the stages found, kept for the result: trials, timings, findings, and the compile and child logs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from kernelgrade.evaluator.integrity.crosscheck import integrity_findings
from kernelgrade.evaluator.judge.compile import CompileOutcome
from kernelgrade.evaluator.result import (
    CompiledBaseline,
    Finding,
    Severity,
    TimingMethod,
    TimingStats,
    TrialResult,
)
from kernelgrade.evaluator.roofline_floor import RooflineFloor
from kernelgrade.evaluator.wire.replies import Integrity


@dataclass
class Record:
    trials: list[TrialResult] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    reference_timing: TimingStats | None = None
    candidate_timing: TimingStats | None = None
    method: TimingMethod | None = None
    compiled: CompileOutcome | None = None
    child_output: str = ""
    roofline: RooflineFloor | None = None
    compiled_baseline: CompiledBaseline | None = None
    compiled_baseline_reused: bool = False
    compiled_baseline_pending: bool = False
    child_peak_bytes: int = 0  # the most the run child reported having held on the device
    # Correctness trials by where their expected outputs came from: computed, stored (on disk) or kept (memory).
    prepared: Counter[str] = field(default_factory=Counter)
    # How the reference's child for timing came to hold it: kept, loaded ahead (beside the trials) or loaded
    # (with why not ahead, where that was tried).
    reference_child: str = ""
    # Calls whose float64 oracle ran on the host, for want of room on the device, by stage (correctness, recheck):
    # tens of seconds on a large problem, which the stage's time alone does not explain.
    oracles_on_host: Counter[str] = field(default_factory=Counter)
    # The candidate's child's shared region as the judge held it (SharedRegion.describe), once the child ended.
    region: str = ""

    def add(self, finding: Finding) -> None:
        """One finding per code: a check that fires on every trial says so once."""
        if all(f.code != finding.code for f in self.findings):
            self.findings.append(finding)

    def note(self, findings: Iterable[Finding]) -> None:
        for finding in findings:
            self.add(finding)

    def child_reported(self, integrity: Integrity) -> list[Finding]:
        """The findings of a child's integrity report; its peak memory is kept on the way."""
        self.child_peak_bytes = max(self.child_peak_bytes, integrity.peak_device_bytes)
        return integrity_findings(integrity)

    def flags(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.FLAG]

    def speedup(self) -> float | None:
        if self.reference_timing is None or self.candidate_timing is None or self.candidate_timing.median_ms <= 0:
            return None
        return self.reference_timing.median_ms / self.candidate_timing.median_ms
