"""Build speed: a plain load_inline build beside kernelgrade's sandboxed compile of the same source, one at a
time and K at a time.

    PYTHONPATH=src python3 bench/build_speed.py --device cuda --builds 16 [--serial 3] [--concurrency K] [--jobs J]
    PYTHONPATH=src python3 bench/build_speed.py --device cpu --builds 2 --serial 2 --case cpu_correct

--serial S sources are built one at a time by each way (the medians), --builds N others K at a time by each way
(builds/hour); on a GPU host with 16 builds that is about 3 x (3 + 16 / K) minute-long builds.

The sources are real load_inline kernels from tests/cases (bench/throughput_corpus.py), each with a line of its
own so that no two share a build: CUDA (`cuda_sources`) ones on --device cuda, C++ (`cpp_sources`) ones on
--device cpu (--case restricts them to variants of one case). The one-at-a-time and the concurrent phases get
sources of their own, and plain builds fresh directories, so nothing is a cache hit.

- plain: a fresh `python` process imports the submission and constructs ModelNew, as KernelBench does, with
  its own TORCH_EXTENSIONS_DIR; `load_inline s` is the import and constructor alone, `process s` the whole
  process (interpreter and torch import included).
- kernelgrade: evaluator.precompile(), the compile stage of a grading: the sandboxed compile child (bwrap
  where it works) and the compile cache's bookkeeping, every build as the submission asks;
- kernelgrade+lean: the same, with CUDA sources built without torch/extension.h first (child/lean_header.py;
  C++-only sources build as above);
- kernelgrade+lean+pch: with the precompiled torch/extension.h too (the service's default). Its PCHs are built
  first, untimed, by one build of each case (a case whose flags no PCH serves builds as without one); --no-pch
  leaves this way out.

Printed: each way's median seconds one at a time, the ratio to plain, and builds/hour with K builds running at
once (K: --concurrency, by default what the service's compile-ahead would choose on this host). Needs only the
standard library, torch and kernelgrade's evaluator; prints numbers, asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import torch

from kernelgrade.evaluator import EvalRequest, Launcher, ProblemSpec, precompile
from kernelgrade.evaluator.child import lean_header
from kernelgrade.evaluator.judge.compile import BuildTarget, arch_env
from kernelgrade.evaluator.judge.pipeline import build_target
from kernelgrade.evaluator.sandbox.levels import make_launcher
from kernelgrade.worker.build_slots import plan_build_slots, read_host
from throughput_corpus import CASES, CPU_CASES, CUDA_CASES, Expect, ProblemRef, Submission, problem_of, variant

# What the plain process runs: the submission's import and ModelNew's constructor, timed after torch is
# imported, the time printed as JSON on its last line.
PLAIN_BUILD = """
import importlib.util, json, sys, time
import torch
started = time.monotonic()

def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

problem = load(sys.argv[2], "bench_problem")
load(sys.argv[1], "bench_submission").ModelNew(*problem.get_init_inputs())
print(json.dumps({"build_s": time.monotonic() - started}))
"""


@dataclass(frozen=True)
class Timed:
    seconds: float  # what the way reports as its build
    wall: float  # the whole call, as a client of the way waits for it
    ok: bool
    how: str = ""  # kernelgrade's CUDA builds: "lean" or "as given" (from the build log)


@dataclass(frozen=True)
class Way:
    name: str
    build: Callable[[Submission, Path], Timed]  # one build into a fresh directory under the given one


def spec_of(problem: ProblemRef) -> ProblemSpec:
    from kernelgrade.problems import find_builtin, load_problem_source

    builtin = find_builtin(problem.name) if problem.builtin else None
    return builtin.spec() if builtin else load_problem_source(problem.source, problem.name).spec()


def plain_way(target: BuildTarget) -> Way:
    def build(submission: Submission, scratch: Path) -> Timed:
        (scratch / "submission.py").write_text(submission.source)
        (scratch / "problem.py").write_text(submission.problem.source)
        env = {**os.environ, "TORCH_EXTENSIONS_DIR": str(scratch / "ext"), "MAX_JOBS": str(target.jobs),
               **arch_env(target)}
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-c", PLAIN_BUILD, str(scratch / "submission.py"),
                               str(scratch / "problem.py")], env=env, capture_output=True, text=True, check=False)
        wall = time.monotonic() - started
        if done.returncode != 0:
            print(f"plain build of variant {submission.index} failed:\n{done.stderr[-2000:]}", file=sys.stderr)
            return Timed(wall, wall, ok=False)
        return Timed(float(json.loads(done.stdout.strip().splitlines()[-1])["build_s"]), wall, ok=True)

    return Way("plain", build)


def kernelgrade_way(name: str, launcher: Launcher, jobs: int, cache: Path, pch: bool, lean: bool) -> Way:
    """Builds into one compile cache (the sources are distinct, so no build hits it; its PCHs persist)."""
    def build(submission: Submission, scratch: Path) -> Timed:
        request = EvalRequest(problem=spec_of(submission.problem), submission=submission.source, cache_dir=cache,
                              work_root=scratch / "work", compile_jobs=jobs, precompiled_header=pch,
                              lean_cuda_header=lean)
        started = time.monotonic()
        outcome = precompile(request, launcher)
        wall = time.monotonic() - started
        if outcome.failure is not None:
            print(f"{name} build of variant {submission.index} failed: {outcome.failure.message}", file=sys.stderr)
        how = "lean" if lean_header.KEPT in outcome.log else "as given"
        return Timed(wall, wall, ok=outcome.failure is None and not outcome.cache_hit, how=how)

    return Way(name, build)


def corpus_of(device: str, n: int, case: str | None) -> list[Submission]:
    """n distinct correct variants, the cases taken in turn (or only `case`)."""
    cases = [c for c in (CUDA_CASES if device == "cuda" else CPU_CASES)
             if c.gets is Expect.CORRECT and case in (None, c.folder)]
    if not cases:
        raise SystemExit(f"no correct {device} case {case!r}")
    corpus = []
    for index in range(n):
        folder = CASES / cases[index % len(cases)].folder
        source = variant((folder / "submission.py").read_text(), index, Expect.CORRECT, cases[index % len(cases)])
        corpus.append(Submission(index, folder.name, Expect.CORRECT, problem_of(folder), source, source))
    return corpus


def warm_up(way: Way, corpus: Sequence[Submission], root: Path) -> None:
    """One build of each case, one at a time, with indices of their own: the PCHs its flags need get built."""
    firsts = {s.case: s for s in reversed(corpus)}.values()
    started = time.monotonic()
    run_phase(way, [Submission(s.index + 100_000, s.case, s.expect, s.problem,
                               s.source.replace("// variant ", "// warm-up variant "), s.base_source) for s in firsts],
              1, root)
    print(f"  {way.name} warm-up: {len(firsts)} build(s) and their PCHs in {time.monotonic() - started:.0f} s",
          flush=True)


def run_phase(way: Way, corpus: Sequence[Submission], concurrency: int, root: Path) -> tuple[list[Timed], float]:
    """Every source built by `way`, `concurrency` at a time; the builds and the phase's wall seconds."""
    scratch = Path(tempfile.mkdtemp(prefix=f"{way.name}-", dir=root))

    def one(submission: Submission) -> Timed:
        folder = scratch / str(submission.index)
        folder.mkdir()
        return way.build(submission, folder)

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        timed = list(pool.map(one, corpus))
    return timed, time.monotonic() - started


def one_at_a_time(ways: Sequence[Way], corpus: Sequence[Submission], root: Path) -> dict[str, list[Timed]]:
    """Each source by each way in turn (plain, kernelgrade, plain, ...), so that drift in the machine's speed
    falls on all ways alike."""
    results: dict[str, list[Timed]] = {way.name: [] for way in ways}
    for submission in corpus:
        for way in ways:
            timed, _ = run_phase(way, [submission], 1, root)
            results[way.name] += timed
            print(f"  {way.name:<18} variant {submission.index:>3} {submission.case:<30} {timed[0].wall:7.1f} s"
                  f"  {timed[0].how}", flush=True)
    return results


def print_serial(results: dict[str, list[Timed]]) -> None:
    plain = statistics.median(t.wall for t in results["plain"])
    print(f"\none at a time, median of {len(results['plain'])}:")
    print(f"  {'way':<18} {'build s':>9} {'process s':>10} {'ratio':>7} {'ok':>4}")
    for name, timed in results.items():
        build = statistics.median(t.seconds for t in timed)
        wall = statistics.median(t.wall for t in timed)
        print(f"  {name:<18} {build:9.1f} {wall:10.1f} {wall / plain:7.2f} {sum(t.ok for t in timed):>4}")
    print("  (ratio: the way's whole wall over plain's whole process; plain's build s is the import and"
          " constructor alone)")


def print_concurrent(name: str, timed: list[Timed], wall: float, concurrency: int) -> None:
    median = statistics.median(t.wall for t in timed)
    lean = sum(t.how == "lean" for t in timed)
    print(f"  {name:<18} {len(timed) * 3600 / wall:9.0f} builds/hour  ({len(timed)} builds in {wall:.0f} s,"
          f" {concurrency} at once, {median:.1f} s each (median), {sum(t.ok for t in timed)} ok, {lean} lean)",
          flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--builds", type=int, default=3, help="sources built K at a time by each way (default 3)")
    parser.add_argument("--serial", type=int, default=3, help="sources built one at a time by each way (default 3)")
    parser.add_argument("--concurrency", type=int, default=0, help="builds at once (default: the service's choice)")
    parser.add_argument("--jobs", type=int, default=0, help="MAX_JOBS of each build (default: the service's choice)")
    parser.add_argument("--sandbox", default="auto")
    parser.add_argument("--case", help="only variants of this tests/cases folder")
    parser.add_argument("--no-pch", action="store_true", help="leave out the kernelgrade+lean+pch way")
    parser.add_argument("--ways", help="only these ways, comma-separated (e.g. plain,kernelgrade+lean)")
    parser.add_argument("--keep", action="store_true", help="keep the build dirs (removed by default)")
    args = parser.parse_args()
    host = read_host()
    slots = plan_build_slots(args.concurrency, args.jobs or 4, torch.cuda.device_count(), host)
    jobs = args.jobs or slots.jobs
    corpus = corpus_of(args.device, args.serial + args.builds, args.case)
    serial_corpus, concurrent_corpus = corpus[: args.serial], corpus[args.serial :]
    # A benchmark of the repository's own kernels: --sandbox none on its command line is the operator's choice.
    launcher = make_launcher(args.sandbox, allow_unsandboxed=True)
    target = build_target(EvalRequest(problem=spec_of(corpus[0].problem), submission="", cache_dir=Path(),
                                      work_root=Path(), compile_jobs=jobs))
    root = Path(tempfile.mkdtemp(prefix="kg-build-speed-"))
    ways = [plain_way(target), kernelgrade_way("kernelgrade", launcher, jobs, root / "cache", pch=False, lean=False),
            kernelgrade_way("kernelgrade+lean", launcher, jobs, root / "cache-lean", pch=False, lean=True)]
    if not args.no_pch:
        ways.append(kernelgrade_way("kernelgrade+lean+pch", launcher, jobs, root / "cache-pch", pch=True, lean=True))
    if args.ways:
        ways = [way for way in ways if way.name in args.ways.split(",")]
    print(f"device {args.device}, {len(corpus)} distinct sources, {host.cores} cores, MAX_JOBS {jobs},"
          f" sandbox {launcher.level}, arch {target.arch or '-'}, torch {torch.__version__}")
    if ways[-1].name.endswith("+pch"):
        warm_up(ways[-1], serial_corpus, root)
    serial = one_at_a_time(ways, serial_corpus, root)
    print_serial(serial)
    print(f"\n{slots.workers} at a time ({slots.why}):")
    for way in ways:
        if slots.workers == 1 and len(serial_corpus) == len(concurrent_corpus):
            timed = serial[way.name]
            print_concurrent(way.name, timed, sum(t.wall for t in timed), 1)
            continue
        timed, wall = run_phase(way, concurrent_corpus, slots.workers, root)
        print_concurrent(way.name, timed, wall, slots.workers)
    if args.keep:
        print(f"\n(build dirs under {root})")
    else:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
