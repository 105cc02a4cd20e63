"""The verdict table and JUnit report of `kernelgrade eval`: trials' errors, and a torch.compile baseline."""

from __future__ import annotations

import dataclasses
import re
import xml.etree.ElementTree as ET

import torch

from kernelgrade.cli.report import junit_xml, verdict_table
from kernelgrade.evaluator import (
    BaselineStatus,
    CompiledBaseline,
    EvalResult,
    Failure,
    PrecisionPolicy,
    Stage,
    TimingStats,
    TrialResult,
    Verdict,
)
from kernelgrade.evaluator.compare import Expected, compare_values


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


def test_the_table_gives_the_speedup_with_its_interval() -> None:
    timed = dataclasses.replace(result(None, None), reference_timing=dataclasses.replace(
        stats(2.0), ci95_low_ms=1.9, ci95_high_ms=2.1))
    line = next(line for line in verdict_table(timed, "k.py").splitlines() if line.startswith("speedup "))
    assert line == ("speedup     1.316x (reference median / candidate median; 95% interval"
                    f" {1.9 / 1.52:.3f}-{2.1 / 1.52:.3f}x)")


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


def failing_trial_result() -> EvalResult:
    """A kernel off by 0.5 everywhere, on inputs with an exact zero: the elementwise max |out - ref| / |ref|
    divides by that zero's clamp (1e-12) and reads 5e11; the norm-wise relative error is about 0.5."""
    x = torch.randn(64, 64, generator=torch.Generator().manual_seed(0))
    x[3, 5] = 0.0
    expected = Expected([x.clone()], [x.double()], lambda _rounding: [x.clone()])
    comparison = compare_values([x + 0.5], expected, PrecisionPolicy())
    assert not comparison.passed and comparison.max_rel_error is not None and comparison.max_rel_error > 1e11
    trial = TrialResult(0, False, comparison.passed, comparison.message, comparison.max_abs_error,
                        comparison.max_rel_error, comparison.rel_error_vs_reference, comparison.rel_error_vs_oracle,
                        comparison.reference_error_vs_oracle)
    failure = Failure(Stage.CORRECTNESS, comparison.code, f"trial 0 (public seed): {comparison.message}")
    return EvalResult(verdict=Verdict.INCORRECT, problem="add_relu", problem_hash="h", precision="fp32",
                      failure=failure, trials=(trial,))


def test_the_trial_table_shows_the_relative_error_the_reason_quotes() -> None:
    table = verdict_table(failing_trial_result(), "k.py")
    quoted = re.search(r"Relative error (\S+),", table)
    assert quoted is not None
    header, row = (line.split() for line in table.splitlines() if line.startswith(("trial ", "    0 ")))
    assert header == ["trial", "seed", "passed", "rel_error", "pytorch_rel_error", "max_abs_diff"]
    assert row[3] == quoted.group(1)  # one relative error, the same figure in the reason and the table
    assert "e+11" not in table and "max_rel" not in table
    assert "||output - float64 result|| / ||float64 result||" in table


def test_without_a_float64_oracle_the_relative_error_is_against_the_reference() -> None:
    trial = TrialResult(0, True, True, "", max_abs_error=1e-6, max_rel_error=3e9, rel_error_vs_reference=2e-7)
    table = verdict_table(EvalResult(verdict=Verdict.CORRECT, problem="p", problem_hash="h", precision="tolerance",
                                     trials=(trial,)), "k.py")
    row = next(line.split() for line in table.splitlines() if line.startswith("    0 "))
    assert row[3:] == ["2e-07", "-", "1e-06"]
    assert "||output - reference|| / ||reference||" in table and "float64" not in table
