"""The verdict table and JUnit report of `kernelgrade eval` for a result with a torch.compile baseline."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from kernelgrade.cli.report import junit_xml, verdict_table
from kernelgrade.evaluator import BaselineStatus, CompiledBaseline, EvalResult, TimingStats, Verdict


def stats(median: float) -> TimingStats:
    return TimingStats(n=20, median_ms=median, mean_ms=median, std_ms=0.01, min_ms=median, max_ms=median,
                       ci95_low_ms=median, ci95_high_ms=median, stop_reason="target precision")


def result(baseline: CompiledBaseline | None, vs_compiled: float | None) -> EvalResult:
    return EvalResult(verdict=Verdict.CORRECT, problem="add_relu", problem_hash="h", precision="fp32",
                      reference_timing=stats(2.0), candidate_timing=stats(1.52), speedup=2.0 / 1.52,
                      compiled_baseline=baseline, speedup_vs_compiled=vs_compiled)


def baseline(status: BaselineStatus = BaselineStatus.MEASURED, message: str = "") -> CompiledBaseline:
    return CompiledBaseline(status=status, problem_hash="h", backend="inductor (mode default)", device_name="cpu",
                            torch="2.x", measured_at="2026-11-20T10:00:00+00:00",
                            timing=stats(1.234) if status is BaselineStatus.MEASURED else None, message=message)


def test_the_table_shows_the_speedup_against_torch_compile() -> None:
    table = verdict_table(result(baseline(), 1.234 / 1.52), "k.py")
    lines = table.splitlines()
    speedup_at = next(i for i, line in enumerate(lines) if line.startswith("speedup "))
    assert lines[speedup_at + 1] == "vs compile  0.812x (torch.compile reference 1.234 ms, inductor (mode default))"


def test_the_table_says_why_the_compiled_baseline_failed() -> None:
    failed = baseline(BaselineStatus.FAILED, "torch.compile raised BackendCompilerFailed: no C++ compiler")
    table = verdict_table(result(failed, None), "k.py")
    assert ("vs compile  - (torch.compile of the reference failed: torch.compile raised BackendCompilerFailed:"
            " no C++ compiler)") in table


def test_without_a_compiled_baseline_nothing_is_added() -> None:
    plain = result(None, None)
    assert "vs compile" not in verdict_table(plain, "k.py")
    names = {p.get("name") for p in ET.fromstring(junit_xml(plain, "k.py", None)).iter("property")}
    assert names == {"verdict", "speedup"}


def test_junit_carries_the_speedup_against_torch_compile() -> None:
    suite = ET.fromstring(junit_xml(result(baseline(), 0.8123), "k.py", None))
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties["speedup_vs_compiled"] == "0.812"
    assert properties["compiled_baseline"] == "measured" and properties["compiled_baseline_ms"] == "1.23"
