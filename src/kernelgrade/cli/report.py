"""Rendering an EvalResult for people (a table) and for CI (JUnit XML)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence

from kernelgrade.evaluator import BaselineStatus, EvalResult, TimingStats, TrialResult, Verdict
from kernelgrade.evaluator.speedup_interval import speedup_bounds
from kernelgrade.sandbox_policy import UNSANDBOXED_WARNING, unsandboxed


def result_warnings(result: EvalResult) -> list[str]:
    """What a reader of the result must not miss; today, that it ran with no sandbox."""
    return [UNSANDBOXED_WARNING] if result.environment and unsandboxed(result.environment.sandbox) else []


def verdict_table(result: EvalResult, submission: str) -> str:
    lines = [f"submission  {submission}", f"problem     {result.problem}  ({result.precision})",
             f"verdict     {result.verdict.value.upper()}"]
    lines += [f"warning     {warning}" for warning in result_warnings(result)]
    if result.failure:
        lines.append(f"reason      [{result.failure.stage.value}/{result.failure.code}] {result.failure.message}")
    lines.extend(_trial_lines(result.trials))
    lines.extend(_timing_lines(result))
    for finding in result.findings:
        lines.append(f"finding     [{finding.severity.value}] {finding.code}: {finding.message}")
    if result.environment:
        env = result.environment
        lines.append(f"\nenvironment {env.device_name} | driver {env.driver or '-'} | torch {env.torch}"
                     f" | CUDA {env.cuda or '-'} | sandbox {env.sandbox}")
    stages = ", ".join(f"{name} {seconds:.1f}s" for name, seconds in result.stage_seconds if ":" not in name)
    lines.append(f"stages      {stages}{' (compile cache hit)' if result.compile_cache_hit else ''}")
    if result.failure and result.failure.detail and result.verdict is not Verdict.CORRECT:
        lines.append("\n" + result.failure.detail.rstrip())
    return "\n".join(lines)


def _trial_lines(trials: Sequence[TrialResult]) -> list[str]:
    """One relative error, the norm-wise one the reason line quotes; the elementwise max |out - ref| / |ref|
    (in --json) is left off, as it divides by reference values near zero and reads 1e12 for a fine output."""
    if not trials:
        return []
    oracle = any(t.rel_error_vs_oracle is not None for t in trials)
    lines = ["", "trial  seed    passed  rel_error  pytorch_rel_error  max_abs_diff"]
    for t in trials:
        relative = t.rel_error_vs_oracle if oracle else t.rel_error_vs_reference
        lines.append(f"{t.index:>5}  {'secret' if t.secret else 'public':<6}  {'yes' if t.passed else 'NO':<6}"
                     f"  {_num(relative):>9}  {_num(t.reference_error_vs_oracle):>17}  {_num(t.max_abs_error):>12}")
    if not oracle:
        return [*lines, "rel_error          ||output - reference|| / ||reference||, over the whole output",
                "max_abs_diff       the largest |output - reference| of one element"]
    return [*lines, "rel_error          ||output - float64 result|| / ||float64 result||, over the whole output:"
                    " the reason's \"Relative error\"",
            "pytorch_rel_error  the same for PyTorch's fp32 reference; the limit is a multiple of it",
            "max_abs_diff       the largest |output - reference| of one element"]


def _timing_lines(result: EvalResult) -> list[str]:
    if result.reference_timing is None or result.candidate_timing is None:
        return []
    lines = ["", "timing      n     median_ms  95% CI of median     mean_ms   std_ms    min_ms"]
    lines.append(_stats_line("reference", result.reference_timing))
    lines.append(_stats_line("candidate", result.candidate_timing))
    if result.speedup is not None:
        lines.append(f"speedup     {result.speedup:.3f}x (reference median / candidate median{_interval(result)})")
    lines.extend(_compiled_lines(result))
    if result.method:
        m = result.method
        flush_mib = m.flush_bytes // (1024 * 1024)
        lines.append(f"method      {m.clock}, flush {flush_mib} MiB, warm-up >= {m.warmup_calls} calls and"
                     f" {m.warmup_ms:g} ms, stop at median CI <= {m.target_median_ci:g}"
                     f" after {m.min_reps} reps, or at {m.max_device_ms:g} ms device / {m.max_wall_ms:g} ms wall /"
                     f" {m.max_reps} reps; {m.input_sets} input sets")
    return lines


def _interval(result: EvalResult) -> str:
    bounds = speedup_bounds(result.reference_timing, result.candidate_timing)
    return f"; 95% interval {bounds[0]:.3f}-{bounds[1]:.3f}x" if bounds else ""


def _compiled_lines(result: EvalResult) -> list[str]:
    baseline = result.compiled_baseline
    if baseline is None:
        return []
    if baseline.status is BaselineStatus.FAILED or baseline.median_ms is None:
        return [f"vs compile  - (torch.compile of the reference failed: {baseline.message or 'no timing'})"]
    speedup = "-" if result.speedup_vs_compiled is None else f"{result.speedup_vs_compiled:.3f}x"
    reused = f", measured {baseline.measured_at}" if result.compiled_baseline_reused else ""
    return [f"vs compile  {speedup} (torch.compile reference {baseline.median_ms:.4g} ms, {baseline.backend}{reused})"]


def _stats_line(label: str, s: TimingStats) -> str:
    ci = f"[{s.ci95_low_ms:.4f}, {s.ci95_high_ms:.4f}]"
    return (f"{label:<10} {s.n:>4}  {s.median_ms:>10.4f}  {ci:<19} {s.mean_ms:>8.4f} {s.std_ms:>8.4f}"
            f" {s.min_ms:>9.4f}  ({s.stop_reason})")


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def junit_xml(result: EvalResult, submission: str, min_speedup: float | None) -> str:
    seconds = result.seconds
    suite = ET.Element("testsuite", name="kernelgrade", tests="1", time=f"{seconds:.3f}")
    case = ET.SubElement(suite, "testcase", classname=f"kernelgrade.{result.problem}", name=submission,
                         time=f"{seconds:.3f}")
    failing = result.verdict is not Verdict.CORRECT
    too_slow = (not failing and min_speedup is not None
                and (result.speedup is None or result.speedup < min_speedup))
    if result.verdict is Verdict.ERROR:
        suite.set("errors", "1")
        ET.SubElement(case, "error", message=_message(result), type="error").text = _detail(result)
    elif failing or too_slow:
        suite.set("failures", "1")
        message = _message(result) if failing else f"speedup {result.speedup} is below {min_speedup}"
        ET.SubElement(case, "failure", message=message, type=result.verdict.value).text = _detail(result)
    props = ET.SubElement(case, "properties")
    for name, value in _properties(result):
        ET.SubElement(props, "property", name=name, value=value)
    ET.SubElement(case, "system-out").text = verdict_table(result, submission)
    return ET.tostring(suite, encoding="unicode", xml_declaration=True)


def _properties(result: EvalResult) -> list[tuple[str, str]]:
    properties = [("verdict", result.verdict.value), ("speedup", _num(result.speedup))]
    properties += [("warning", warning) for warning in result_warnings(result)]
    if result.compiled_baseline is not None:
        properties += [("speedup_vs_compiled", _num(result.speedup_vs_compiled)),
                       ("compiled_baseline", result.compiled_baseline.status.value),
                       ("compiled_baseline_ms", _num(result.compiled_baseline.median_ms))]
    return properties


def _message(result: EvalResult) -> str:
    return f"{result.verdict.value}: {result.failure.message if result.failure else ''}"


def _detail(result: EvalResult) -> str:
    return result.failure.detail if result.failure else ""
