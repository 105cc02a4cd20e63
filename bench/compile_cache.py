"""Compile cache and grader overhead: cold compile time, cache-hit time, and what grading costs beyond
compiling and the device time of the timed calls.

    PYTHONPATH=src python3 bench/compile_cache.py                          # CPU: add_relu + a C++ extension
    PYTHONPATH=src python3 bench/compile_cache.py --problem square_matmul \
        --submission tests/cases/seed_003/submission.py

Prints numbers; asserts nothing. Needs only the standard library, torch and kernelgrade.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from kernelgrade.evaluator import EvalRequest, EvalResult, evaluate, precompile
from kernelgrade.evaluator.sandbox.levels import make_launcher
from kernelgrade.problems import find_builtin

ROOT = Path(__file__).resolve().parent.parent


def device_ms(result: EvalResult) -> float:
    """Time spent inside timed calls, as measured: every reference and candidate sample."""
    total = 0.0
    for stats in (result.reference_timing, result.candidate_timing):
        if stats is not None:
            total += sum(stats.samples_ms)
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problem", default="add_relu")
    parser.add_argument("--submission", type=Path, default=ROOT / "tests/cases/cpu_correct/submission.py")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sandbox", default="auto")
    args = parser.parse_args()
    problem = find_builtin(args.problem)
    if problem is None:
        print(f"unknown problem {args.problem}", file=sys.stderr)
        return 2
    root = Path(tempfile.mkdtemp(prefix="kg-bench-"))
    request = EvalRequest(problem=problem.spec(), submission=args.submission.read_text(), cache_dir=root / "cache",
                          work_root=root / "work")
    # A benchmark of a file the operator names: --sandbox none on its command line is their explicit choice.
    launcher = make_launcher(args.sandbox, allow_unsandboxed=True)
    started = time.monotonic()
    cold = precompile(request, launcher)
    cold_s = time.monotonic() - started
    started = time.monotonic()
    hit = precompile(request, launcher)
    hit_s = time.monotonic() - started
    print(f"problem {problem.name}, submission {args.submission}, sandbox {launcher.level}")
    print(f"cold compile:        {cold_s:8.2f} s  (cache hit: {cold.cache_hit}, failure: {cold.failure is not None})")
    print(f"cache-hit compile:   {hit_s:8.3f} s  (cache hit: {hit.cache_hit})")
    overheads = []
    for run in range(args.runs):
        started = time.monotonic()
        result = evaluate(request, launcher)
        wall = time.monotonic() - started
        stages = dict(result.stage_seconds)
        overhead = wall - stages.get("compile", 0.0) - device_ms(result) / 1000.0
        overheads.append(overhead)
        compile_s = stages.get("compile", 0.0)
        print(f"evaluation {run + 1}: {result.verdict.value:<8} wall {wall:6.2f} s, compile {compile_s:.3f} s,"
              f" timed device {device_ms(result) / 1000:.2f} s, grader overhead {overhead:.2f} s"
              f"  [{', '.join(f'{k} {v:.2f}' for k, v in stages.items())}]")
    print(f"grader overhead per evaluation (median of {args.runs}): {statistics.median(overheads):.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
