"""Does the sandbox change what we measure? Grades one submission under several sandbox levels and prints a
table per level (verdict, reference median, candidate median, speedup), runs interleaved so that drift of
the machine hits every level alike.

    PYTHONPATH=src python3 bench/sandbox_compare.py PROBLEM SUBMISSION [--runs 5] [--levels none,bwrap]
        [--device cuda:0] [--bwrap /opt/bubblewrap/usr/bin/bwrap] [--data DIR]

PROBLEM is a built-in problem name or a KernelBench-format file. A bwrap unpacked from the Debian package
under some prefix is found on PATH, or given with --bwrap. The first run of each level may include the
compile (a cache miss); it is marked. Expect the candidate medians of `none` and `bwrap` to agree within
their confidence intervals: the sandbox adds no work to the timed calls. Imports only the standard
library, torch, kernelgrade.evaluator and kernelgrade.problems.
"""

from __future__ import annotations

import argparse
import secrets
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from kernelgrade.evaluator import DeviceKind, EvalRequest, EvalResult, ProblemSpec, TrialPlan, evaluate
from kernelgrade.evaluator.sandbox.isolation import SandboxOptions
from kernelgrade.evaluator.sandbox.launcher import Launcher
from kernelgrade.evaluator.sandbox.levels import SandboxUnavailable, describe_launcher, make_launcher
from kernelgrade.problems import find_builtin, load_problem_file


@dataclass(frozen=True)
class Run:
    level: str
    index: int
    result: EvalResult
    wall_s: float


def load_problem(ref: str, device: str | None) -> tuple[ProblemSpec, int]:
    builtin = find_builtin(ref)
    problem = builtin if builtin is not None else load_problem_file(Path(ref))
    spec = problem.spec()
    if device is None:
        return spec, 0
    kind, _, index = device.partition(":")
    return replace(spec, device=DeviceKind(kind)), int(index or 0)


def grade(level: str, launcher: Launcher, request: EvalRequest, index: int) -> Run:
    started = time.monotonic()
    result = evaluate(request, launcher)
    return Run(level, index, result, time.monotonic() - started)


def _ms(value: float | None) -> str:
    return f"{value:10.4f}" if value is not None else f"{'-':>10}"


def print_table(level: str, launcher: Launcher, runs: Sequence[Run]) -> None:
    print(f"\n== {level}: " + "; ".join(describe_launcher(launcher)[1:]))
    print(f"{'run':>3} {'verdict':<14} {'ref_ms':>10} {'cand_ms':>10} {'speedup':>8} {'cache':>6} {'wall_s':>7}")
    for run in runs:
        r = run.result
        ref = r.reference_timing.median_ms if r.reference_timing else None
        cand = r.candidate_timing.median_ms if r.candidate_timing else None
        speedup = f"{r.speedup:8.3f}" if r.speedup is not None else f"{'-':>8}"
        cache = "hit" if r.compile_cache_hit else "miss"
        print(f"{run.index:>3} {r.verdict.value:<14} {_ms(ref)} {_ms(cand)} {speedup} {cache:>6} {run.wall_s:7.1f}")
        if r.failure is not None:
            print(f"    {r.failure.code}: {r.failure.message.splitlines()[0][:100]}")
    speedups = [run.result.speedup for run in runs if run.result.speedup is not None]
    cands = [run.result.candidate_timing.median_ms for run in runs if run.result.candidate_timing]
    if speedups and cands:
        print(f"    median speedup {statistics.median(speedups):.3f},"
              f" median candidate {statistics.median(cands):.4f} ms")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("problem")
    parser.add_argument("submission", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--levels", default="none,bwrap")
    parser.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: the problem's)")
    parser.add_argument("--bwrap", default=None, help="the bwrap executable (default: the one on PATH)")
    parser.add_argument("--data", type=Path, default=None, help="compile cache and work dirs (default: a temp dir)")
    args = parser.parse_args(argv)
    spec, device_index = load_problem(args.problem, args.device)
    data = args.data or Path(tempfile.mkdtemp(prefix="kg-sandbox-compare-"))
    request = EvalRequest(problem=spec, submission=args.submission.read_text(), cache_dir=data / "cache",
                          work_root=data / "work", device_index=device_index,
                          trials=TrialPlan(secret=secrets.token_hex(16)))
    try:
        launchers = {level: make_launcher(level, options=SandboxOptions(bwrap=args.bwrap), allow_unsandboxed=True)
                     for level in args.levels.split(",")}
    except SandboxUnavailable as exc:
        print(f"cannot compare: {exc}", file=sys.stderr)
        return 2
    runs = [grade(level, launcher, request, i) for i in range(args.runs) for level, launcher in launchers.items()]
    print(f"{spec.name} on {spec.device.value}:{device_index}, {args.runs} runs per level, data in {data}")
    for level, launcher in launchers.items():
        print_table(level, launcher, [run for run in runs if run.level == level])
    return 0


if __name__ == "__main__":
    sys.exit(main())
