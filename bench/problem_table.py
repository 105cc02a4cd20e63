"""Eager reference timings of the built-in problems, with achieved TFLOP/s and GB/s, for the GPU host.

    PYTHONPATH=src python3 bench/problem_table.py [NAME...] [--suite S] [--device cuda|cpu] [--out FILE]
                                                  [--compiled] [--sandbox none|bwrap|...]

Each problem's reference runs exactly as the judge times it (kernelgrade.evaluator.timing: warm-up, then
reps with a cache flush, default TimingParams, strict fp32), so the medians here are the reference side of
every speedup. TFLOP/s and GB/s come from the problem's declared flops and bytes: a memory-bound problem
far below the device's bandwidth, or a compute-bound one far below its fp32 peak, is measuring overhead.
With --compiled, torch.compile of each reference is also measured as the judge measures its second
baseline (kernelgrade.evaluator.judge.compiled_baseline: in a run child, same timing sets and loop), giving the
eager/compiled ratio: how much a plain compiler already gains.
Imports only the standard library, torch, kernelgrade.evaluator and kernelgrade.problems.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch

from kernelgrade.evaluator import timing
from kernelgrade.evaluator.host.environment import describe
from kernelgrade.evaluator.host.reference import Reference, derive_seed, to_device
from kernelgrade.evaluator.integrity import precision_flags
from kernelgrade.evaluator.judge import compiled_baseline
from kernelgrade.evaluator.request import BaselinePlan, Limits, TimingParams
from kernelgrade.evaluator.sandbox.launcher import Launcher
from kernelgrade.evaluator.sandbox.levels import make_launcher
from kernelgrade.problems import Problem, builtin_problems

# The judge's default TrialPlan seed: the same weights and timing inputs a default evaluation uses.
SEED = 42


@dataclass(frozen=True)
class Row:
    problem: str
    suite: str
    median_ms: float
    ci95_low_ms: float
    ci95_high_ms: float
    reps: int
    stop_reason: str
    tflops: float | None
    gbps: float | None
    compiled_ms: float | None = None
    compiled_status: str = ""  # "", or the compiled baseline's status ("measured" / "failed: why")
    compile_s: float | None = None


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    device = torch.device("cuda", 0) if args.device == "cuda" else torch.device("cpu")
    if device.type == "cuda" and not torch.cuda.is_available():
        print("error: no CUDA device here; --device cpu times the cpu suite", file=sys.stderr)
        return 2
    problems = _selected(args.device, args.suite, args.names)
    if not problems:
        print(f"error: no built-in {args.device} problems match", file=sys.stderr)
        return 2
    params = TimingParams()
    if args.max_device_ms is not None:
        params = replace(params, max_device_ms=args.max_device_ms)
    precision_flags.set_strict()
    launcher = make_launcher(args.sandbox, allow_unsandboxed=True) if args.compiled else None  # references only
    env = describe(device, launcher.level if launcher else "none")
    print(f"# {env.device_name} | torch {env.torch} | CUDA {env.cuda or '-'} | strict fp32 | {params}")
    print(_header())
    rows = []
    for problem in problems:
        row = time_problem(problem, device, params, launcher)
        rows.append(row)
        print(_line(row), flush=True)
        if args.out:  # after every row, so a run cut short still leaves what it measured
            table = {"environment": asdict(env), "timing": asdict(params), "rows": [asdict(r) for r in rows]}
            args.out.write_text(json.dumps(table, indent=2))
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="Time the built-in problems' references.")
    parser.add_argument("names", nargs="*", metavar="NAME", help="only these problems")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                        help="time the problems of this device kind on it (cuda:0 or the CPU)")
    parser.add_argument("--suite", default=None, help="only problems of this suite")
    parser.add_argument("--out", type=Path, default=None, help="also write the table as JSON here")
    parser.add_argument("--max-device-ms", type=float, default=None, metavar="MS",
                        help="device time cap per problem (default: TimingParams'); lower only for a smoke run")
    parser.add_argument("--compiled", action="store_true",
                        help="also time torch.compile of each reference, as the judge's second baseline")
    parser.add_argument("--sandbox", default="none",
                        help="launcher for the compiled reference's child: auto, bwrap, unshare or none")
    return parser


def _selected(device: str, suite: str | None, names: Sequence[str]) -> list[Problem]:
    return [p for p in builtin_problems()
            if p.device.value == device and suite in (None, p.suite) and (not names or p.name in names)]


def time_problem(problem: Problem, device: torch.device, params: TimingParams,
                 launcher: Launcher | None = None) -> Row:
    """The judge's reference timing: its input sets, warm-up, flushed reps and summary; with a launcher,
    torch.compile of the reference too."""
    row = time_eager(problem, device, params)
    if launcher is None:
        return row
    reference = Reference(problem.spec(), device, SEED)
    # The baseline's own dir inside goes in the judge's remover thread, perhaps as this one goes.
    with tempfile.TemporaryDirectory(prefix="problem-table-", ignore_cleanup_errors=True) as work:
        baseline = compiled_baseline.measure_problem(reference, launcher, Path(work), params, Limits(),
                                                     BaselinePlan(measure=True), SEED)
    del reference
    if device.type == "cuda":
        torch.cuda.empty_cache()
    status = baseline.status.value + (f": {baseline.message}" if baseline.message else "")
    return replace(row, compiled_ms=baseline.median_ms, compiled_status=status,
                   compile_s=baseline.compile_seconds)


def time_eager(problem: Problem, device: torch.device, params: TimingParams) -> Row:
    reference = Reference(problem.spec(), device, SEED)
    sets = [to_device(reference.make_inputs(derive_seed(SEED, "timing", k, "")), device)
            for k in range(params.input_sets)]
    with torch.no_grad():
        timing.warm_up(reference.model, sets, device, params)
        flusher = timing.Flusher(device, params.flush_bytes or timing.default_flush_bytes(device))
        raw = timing.measure(reference.model, sets, device, params, flusher)
    stats = timing.summarize(raw.device_ms, raw.stop_reason)
    del reference, sets, flusher
    if device.type == "cuda":
        torch.cuda.empty_cache()
    seconds = stats.median_ms / 1e3
    return Row(problem=problem.name, suite=problem.suite, median_ms=stats.median_ms,
               ci95_low_ms=stats.ci95_low_ms, ci95_high_ms=stats.ci95_high_ms, reps=stats.n,
               stop_reason=stats.stop_reason, tflops=_rate(problem.flops, seconds, 1e12),
               gbps=_rate(problem.bytes_moved, seconds, 1e9))


def _rate(amount: float | None, seconds: float, unit: float) -> float | None:
    return None if amount is None or seconds <= 0 else amount / seconds / unit


def _header() -> str:
    return (f"{'problem':<24} {'suite':<7} {'median_ms':>10} {'95% CI of median':>20} {'reps':>5}"
            f" {'TFLOP/s':>8} {'GB/s':>8} {'compiled_ms':>11} {'eager/compiled':>14}")


def _line(row: Row) -> str:
    ci = f"[{row.ci95_low_ms:.3f}, {row.ci95_high_ms:.3f}]"
    ratio = row.median_ms / row.compiled_ms if row.compiled_ms else None
    failed = f"  {row.compiled_status[:160]}" if row.compiled_status.startswith("failed") else ""
    return (f"{row.problem:<24} {row.suite:<7} {row.median_ms:>10.4f} {ci:>20} {row.reps:>5}"
            f" {_fmt(row.tflops):>8} {_fmt(row.gbps):>8} {_fmt(row.compiled_ms):>11} {_fmt(ratio):>14}{failed}")


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


if __name__ == "__main__":
    sys.exit(main())
