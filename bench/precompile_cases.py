"""Fill a compile cache with every verdict case of one device kind, all builds at once.

On the GPU host each load_inline CUDA build takes about 50 s; building the GPU cases in parallel first
lets `KERNELGRADE_TEST_COMPILE_CACHE=DIR pytest -m gpu tests/test_verdict_cases.py` grade them with
cache hits. Prints one line per case; asserts nothing.

    PYTHONPATH=src python3 bench/precompile_cases.py DIR [--device cuda] [--jobs 8]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from kernelgrade.evaluator import CompileOutcome, EvalRequest, ProblemSpec, precompile
from kernelgrade.evaluator.sandbox.levels import make_launcher
from kernelgrade.problems import find_builtin, load_problem_source

CASES = Path(__file__).resolve().parent.parent / "tests" / "cases"


def case_problem(folder: Path) -> ProblemSpec | None:
    local = folder / "problem.py"
    if local.exists():
        return load_problem_source(local.read_text(), f"{folder.name}_problem").spec()
    builtin = find_builtin((folder / "problem.txt").read_text().strip())
    return builtin.spec() if builtin else None


def build(folder: Path, problem: ProblemSpec, cache: Path, work: Path) -> tuple[str, CompileOutcome, float]:
    request = EvalRequest(problem=problem, submission=(folder / "submission.py").read_text(), cache_dir=cache,
                          work_root=work, compile_jobs=2)
    started = time.monotonic()
    outcome = precompile(request, make_launcher("none", allow_unsandboxed=True))  # the repository's own cases
    return folder.name, outcome, time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cache", type=Path)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--jobs", type=int, default=8)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kg-precompile-"))
    todo = []
    for folder in sorted(p for p in CASES.iterdir() if (p / "submission.py").exists()):
        problem = case_problem(folder)
        if problem is not None and problem.device.value == args.device:
            todo.append((folder, problem))
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for name, outcome, seconds in pool.map(lambda t: build(t[0], t[1], args.cache, work), todo):
            status = "ok" if outcome.failure is None else f"{outcome.failure.code}"
            print(f"{name:<40} {status:<16} {seconds:6.1f} s  builds={outcome.builds}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
