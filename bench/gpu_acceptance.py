"""GPU acceptance: grade the five seed submissions against the built-in problems with their exact shapes.

Run on a GPU host from the repository root:  PYTHONPATH=src python3 bench/gpu_acceptance.py
The seeds are the verdict cases tests/cases/seed_000 ... seed_004 (submission.py and problem.txt).
Prints (and with --out writes as JSON) three tables: the verdicts, the reference medians against the
figures in docs/timing.md, and the spread of speedups when one submission is graded several times.
Needs only the standard library, torch and kernelgrade's evaluator and problems packages.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import torch

from kernelgrade.evaluator import EvalRequest, EvalResult, TimingParams, evaluate, precompile, timing
from kernelgrade.evaluator.host.reference import Reference, derive_seed, to_device
from kernelgrade.evaluator.sandbox.levels import make_launcher
from kernelgrade.problems import find_builtin

CASES = Path(__file__).resolve().parent.parent / "tests" / "cases"
SEEDS = ("000", "001", "002", "003", "004")
# docs/timing.md's reference medians on an H100 (torch.matmul, fp32, TF32 off).
EXPECTED_REFERENCE_MS = {"square_matmul": 2.66, "symmetric_matmul": 2.675, "matmul_transposed_both": 2.74}


def request_for(seed: str, source: str, cache: Path, work: Path) -> EvalRequest:
    problem = find_builtin((CASES / f"seed_{seed}" / "problem.txt").read_text().strip())
    assert problem is not None
    return EvalRequest(problem=problem.spec(), submission=source, cache_dir=cache, work_root=work,
                       compile_jobs=4)


def first_line(result: EvalResult) -> str:
    if result.failure is None:
        return ""
    lines = [line for line in result.failure.message.splitlines() if line.strip()]
    detail = [line for line in result.failure.detail.splitlines() if "error" in line.lower()]
    return (lines[0] if lines else "") + (f" | {detail[0].strip()}" if detail else "")


def row(seed: str, result: EvalResult) -> dict[str, Any]:
    ref, cand = result.reference_timing, result.candidate_timing
    return {"seed": seed, "problem": result.problem, "verdict": result.verdict.value,
            "reference_ms": ref.median_ms if ref else None, "candidate_ms": cand.median_ms if cand else None,
            "candidate_ci": [cand.ci95_low_ms, cand.ci95_high_ms] if cand else None,
            "speedup": result.speedup, "reps": [ref.n if ref else 0, cand.n if cand else 0],
            "stages": dict(result.stage_seconds), "cache_hit": result.compile_cache_hit,
            "sandbox": result.environment.sandbox if result.environment else "",
            "device": result.environment.device_name if result.environment else "",
            "findings": [f.code for f in result.findings], "reason": first_line(result)}


def reference_medians(params: TimingParams) -> list[dict[str, Any]]:
    """Each seed problem's eager reference timed with the judge's own procedure, twice."""
    device = torch.device("cuda:0")
    rows = []
    for name, expected in EXPECTED_REFERENCE_MS.items():
        problem = find_builtin(name)
        assert problem is not None
        reference = Reference(problem.spec(), device, 42)
        sets = [to_device(reference.make_inputs(derive_seed(42, "timing", k, "")), device) for k in range(3)]
        flusher = timing.Flusher(device, timing.default_flush_bytes(device))
        medians = []
        with torch.no_grad():
            for _ in range(2):
                timing.warm_up(reference.model, sets, device, params)
                raw = timing.measure(reference.model, sets, device, params, flusher)
                medians.append(statistics.median(raw.device_ms))
        median = statistics.median(medians)
        rows.append({"problem": name, "median_ms": median, "runs": medians, "expected_ms": expected,
                     "deviation_pct": 100.0 * (median - expected) / expected})
        del reference, sets, flusher
        torch.cuda.empty_cache()
    return rows


def print_tables(verdicts: list[dict[str, Any]], refs: list[dict[str, Any]], repeats: list[dict[str, Any]]) -> None:
    print("\n== verdicts ==")
    print(f"{'seed':<5} {'problem':<23} {'verdict':<14} {'ref ms':>8} {'cand ms':>8} {'speedup':>8}  stages / reason")
    for r in verdicts:
        stages = " ".join(f"{k}={v:.1f}s" for k, v in r["stages"].items())
        print(f"{r['seed']:<5} {r['problem']:<23} {r['verdict']:<14} {_f(r['reference_ms']):>8}"
              f" {_f(r['candidate_ms']):>8} {_f(r['speedup'], 3):>8}  {stages} {r['reason']}")
    print("\n== reference medians vs docs/timing.md ==")
    for r in refs:
        print(f"{r['problem']:<23} {r['median_ms']:.3f} ms (runs {', '.join(f'{m:.3f}' for m in r['runs'])})"
              f"  expected {r['expected_ms']:.3f}  deviation {r['deviation_pct']:+.2f}%")
    if repeats:
        speedups = [r["speedup"] for r in repeats if r["speedup"]]
        spread = 100.0 * (max(speedups) - min(speedups)) / statistics.median(speedups) if speedups else float("nan")
        print(f"\n== seed {repeats[0]['seed']} graded {len(repeats)} times ==")
        print("speedups: " + ", ".join(_f(s, 4) for s in speedups) + f"  (max-min spread {spread:.2f}% of median)")


def _f(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--repeat-seed", default="003")
    parser.add_argument("--sandbox", default="none")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--cache", type=Path, help="compile cache to use (default: a fresh one)")
    parser.add_argument("--no-reference-table", action="store_true", help="skip timing the references alone")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="kg-accept-"))
    cache, work = args.cache or root / "cache", root / "work"
    # The repository's own cases, trusted: --sandbox none is the operator's explicit choice.
    launcher = make_launcher(args.sandbox, allow_unsandboxed=True)
    sources = {s: (CASES / f"seed_{s}" / "submission.py").read_text() for s in SEEDS}
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=len(sources)) as pool:  # compile all seeds at once: 16 cores here
        list(pool.map(lambda s: precompile(request_for(s, sources[s], cache, work), launcher), sources))
    print(f"parallel precompile of {len(sources)} seeds: {time.monotonic() - started:.1f} s", flush=True)
    verdicts = []
    for seed, source in sources.items():
        result = evaluate(request_for(seed, source, cache, work), launcher)
        verdicts.append(row(seed, result))
        print(json.dumps(verdicts[-1]), flush=True)
    repeats = [row(args.repeat_seed, evaluate(request_for(args.repeat_seed, sources[args.repeat_seed], cache, work),
                                              launcher)) for _ in range(args.repeats)]
    refs = [] if args.no_reference_table else reference_medians(TimingParams())
    print_tables(verdicts, refs, repeats)
    if args.out:
        args.out.write_text(json.dumps({"verdicts": verdicts, "references": refs, "repeats": repeats}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
