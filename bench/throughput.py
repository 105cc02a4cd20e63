"""Grading throughput of the embedded service, as an RL loop sees it: N distinct submissions in, N verdicts out.

    PYTHONPATH=src python3 bench/throughput.py [--device cuda|cpu] [--n N] [--prebuilt [--build-jobs J]]
                                               [--compare-warm | --compare KERNELGRADE_X=A,B | --before SRC]
                                               [--side-by-side]
                                               [--env KEY=VALUE ...]
                                               [--compile-errors F] [--wrong F] [--json PATH]

Starts `kernelgrade serve` (SQLite, local judges, sandboxed: bwrap where it works) in a child process on a free
port with a fresh temporary data dir, posts N distinct submissions over HTTP (POST /v1/submissions/batch), and
polls until each has a verdict. The submissions are variants of real load_inline kernels from tests/cases
(bench/throughput_corpus.py): --device cuda uses small CUDA problems and the seeds, --device cpu C++ extensions on
CPU problems. A fraction do not build and a fraction give wrong values; the verdict counts show them caught.

With --prebuilt every submission is graded once first and the same sources are then submitted again (force), so
the measured stream is distinct, already-built submissions (the compile cache hits): verdicts per device-hour.
--build-jobs J first builds them J at a time straight into the server's compile cache (a GPU host's builds take
a minute each). Without --prebuilt the builds are part of the stream: how busy the device stays while they run.

Printed per configuration, side by side where there are several: --compare KERNELGRADE_X=A,B runs one server
with each value (KERNELGRADE_LOCAL_JUDGES=1,2: one GPU, then two; given twice, one server per combination of
the values), --compare-warm is
--compare KERNELGRADE_WARM_CHILDREN=0,8, and --before SRC serves another checkout's source first (before and
after a change, e.g. `git worktree add /tmp/old HEAD~1` and --before /tmp/old/src; with --prebuilt both share
the builds where the change leaves their cache keys alone). --side-by-side runs the configurations at once
instead, each server on a GPU and an equal share of the CPUs of its own (taskset; the GPUs must number at least
the configurations): both sides of a ratio then share the host's conditions (its disk, its memory bandwidth, a
noisy neighbour) and take the time of one; a comparison of judges per server (LOCAL_JUDGES=1,2) wants the whole
host, so it is run without it. --both-orders runs the configurations one after another and then again in
reverse order (before, after, after, before), where one GPU must serve them all: a run's order alone moved
stream rates by several percent on the GPU host.
Printed:
- as verdicts come in, each with its problem, the seconds since its pass began, its time in the judge and its
  largest stages; between them, the judges' work off the verdicts' path (torch.compile baselines, problems
  prepared) as the server logs it, so that a run cut short still says where its time went;
- verdicts/hour: N / wall, wall = first submission's creation to last verdict (server timestamps), or to the cut
  of a --mixed pass cut at --timeout;
- submit-to-verdict latency p50/p95 (each evaluation's finished_at - created_at);
- device seconds per verdict: the stages the run child holds the device (load + correctness + timing +
  compiled_baseline, from each result's stage_seconds), and the busy fraction: their sum / (wall x devices);
- every stage's median and total seconds, the verdict counts by code, and the checks the results record;
- where the judges' time (wall x devices) goes, per verdict: the device stages, the other stages, the rest of
  each job (from its claim to its recorded result, outside every stage: in evaluate() between its stages, and
  in the judge around it) and the time between jobs (claiming the next, or none built yet: with builds in
  the stream, the device waits for them there).
--mixed FOLDER grades a stream like users' instead: N submissions over N distinct problems of a KernelBench
folder (level1/, level2/ ...: --levels), each problem's reference renamed ModelNew, and every fourth submission
a real load_inline kernel of the cases above on a problem of its own, its build in the stream. It is graded
twice on one server with default settings: a first pass (every problem seen for the first time) and a second
(the same submissions again, forced: the problems prepared, the kernels built). Compare it with the
same-problem stream of a run without --mixed (--prebuilt for built kernels).
Then KernelBench's in-process protocol (bench/kernelbench_inprocess.py) on the same correct kernels, built
beforehand, for the ratio of device time per verdict. Prints numbers; asserts nothing. Settings for the server
are KERNELGRADE_* variables (--env), e.g. --env KERNELGRADE_TIMING_PROFILE=fast.
"""

from __future__ import annotations

import argparse
import itertools
import json
import multiprocessing
import os
import random
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch

from host_memory import Sampler
from kernelbench_inprocess import InProcess, build, grade
from kernelbench_sweep import selected
from kernelgrade.config import Settings
from kernelgrade.evaluator import DeviceKind, EvalRequest, ProblemSpec, precompile
from kernelgrade.evaluator.sandbox.levels import make_launcher
from throughput_corpus import KERNEL_EVERY, Expect, ProblemRef, Submission, build_corpus, mixed_corpus
from throughput_report import InProcessSummary, RunReport, print_in_process, print_runs, summarize
from throughput_service import Config, Service, Slice, served

CPU_DEFAULT_N = 6  # a C++ build takes about 20 s on a 2-core machine
CUDA_DEFAULT_N = 40


@dataclass(frozen=True)
class Report:
    device: str
    n: int
    prebuilt: bool
    compile_error_fraction: float
    wrong_fraction: float
    runs: list[RunReport]
    in_process: InProcessSummary | None


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("error: no CUDA device here; --device cpu grades C++ extensions on CPU problems", file=sys.stderr)
        return 2
    corpus = _corpus(args)
    chosen = configs(args)
    if args.both_orders:
        chosen = both_orders(chosen)
    if args.side_by_side:
        chosen = side_by_side(chosen, args.device, os.sched_getaffinity(0), visible_gpus(args.device))
    with tempfile.TemporaryDirectory(prefix="kg-throughput-") as tmp:
        runs = measure_all(chosen, corpus, Path(tmp), args)
        if not runs:  # every pass cut at --timeout before its first verdict
            print(f"# no verdict came in within --timeout {args.timeout:.0f} s")
            return 1
        print_runs(runs)
        # Written before KernelBench's in-process protocol builds its kernels (minutes on a GPU host), so a run
        # stopped there still leaves the service's numbers.
        _write_json(args, len(corpus), runs, None)
        in_process = None if args.no_in_process else in_process_run(corpus, args.device, Path(tmp) / "kb-ext")
    if in_process is not None:
        print_in_process(in_process, runs)
        _write_json(args, len(corpus), runs, in_process)
    return 0


def _write_json(args: argparse.Namespace, n: int, runs: list[RunReport], in_process: InProcessSummary | None) -> None:
    if args.json:
        report = Report(args.device, n, args.prebuilt, args.compile_errors, args.wrong, runs, in_process)
        args.json.write_text(json.dumps(asdict(report), indent=2))


def _compares(args: argparse.Namespace) -> bool:
    """Whether the run has several configurations (whose labels then tell them apart)."""
    return bool(args.compare_warm or args.compare or args.before is not None)


def configs(args: argparse.Namespace) -> list[Config]:
    extra = dict(_setting(item) for item in args.env)
    compared = ["KERNELGRADE_WARM_CHILDREN=0,8"] if args.compare_warm else args.compare
    if args.before is not None:
        return [Config("before", extra, args.before.resolve()), Config("after", extra)]
    if not compared:
        return [Config(" ".join(f"{k}={v}" for k, v in extra.items()) or "defaults", extra)]
    axes = [[(key, value) for value in values.split(",")] for key, values in map(_setting, compared)]
    return [Config(" ".join(f"{k.removeprefix('KERNELGRADE_').lower()}={v}" for k, v in chosen),
                   {**extra, **dict(chosen)}) for chosen in itertools.product(*axes)]


def both_orders(chosen: list[Config]) -> list[Config]:
    """The configurations, then again in reverse order (A B B A): a host that grows faster or slower over the run
    (a warming disk cache, a neighbour that comes and goes) then shows as a difference between a configuration's
    two runs, not as a ratio between configurations."""
    return chosen + [replace(config, label=f"{config.label} (2)") for config in reversed(chosen)]


def side_by_side(chosen: list[Config], device: str, cpus: Iterable[int], gpus: Sequence[str]) -> list[Config]:
    """Each configuration on a slice of the host of its own, to be run at once: GPU i of `gpus` (a CUDA run) and
    the i-th of equal shares of `cpus`, so that a before/after ratio is measured under the same host conditions."""
    ordered = sorted(cpus)
    share = len(ordered) // len(chosen)
    if share == 0 or (device == "cuda" and len(gpus) < len(chosen)):
        raise SystemExit(f"error: --side-by-side runs {len(chosen)} configurations at once, each on a CPU (and, on"
                         f" CUDA, a GPU) of its own; here are {len(ordered)} CPUs and {len(gpus)} GPUs")
    return [replace(config, place=Slice(gpus[i] if device == "cuda" else None,
                                        tuple(ordered[i * share:(i + 1) * share])))
            for i, config in enumerate(chosen)]


def visible_gpus(device: str) -> list[str]:
    """The GPUs this process may use, as a child's CUDA_VISIBLE_DEVICES names them."""
    if device != "cuda":
        return []
    named = os.environ.get("CUDA_VISIBLE_DEVICES")
    if named is not None:
        return [gpu.strip() for gpu in named.split(",") if gpu.strip()]
    return [str(index) for index in range(torch.cuda.device_count())]


def measure_all(chosen: list[Config], corpus: list[Submission], root: Path,
                args: argparse.Namespace) -> list[RunReport]:
    """Every configuration, one after another, or all at once (--side-by-side); with --prebuilt --build-jobs,
    built ahead first into the data dir they share."""
    measured = measure_mixed if args.mixed else measure
    if args.prebuilt and args.build_jobs:
        build_ahead(corpus, args.device, root / "data", args.build_jobs, chosen[0])
    if not args.side_by_side:
        return [run for i, config in enumerate(chosen) for run in measured(config, corpus, root, i, args)]
    with ThreadPoolExecutor(len(chosen)) as pool:
        done = pool.map(lambda indexed: measured(indexed[1], corpus, root, indexed[0], args), enumerate(chosen))
        return [run for runs in done for run in runs]


def _corpus(args: argparse.Namespace) -> list[Submission]:
    if not args.mixed:
        n = args.n or (CUDA_DEFAULT_N if args.device == "cuda" else CPU_DEFAULT_N)
        return build_corpus(args.device, n, args.compile_errors, args.wrong)
    problems = kernelbench_problems(args.mixed, args.levels)
    # Every problem of the folder once, and the kernels among them.
    n = args.n or len(problems) + len(problems) // (KERNEL_EVERY - 1)
    return mixed_corpus(problems, args.device, n)


def kernelbench_problems(folder: Path, levels: Sequence[int]) -> list[ProblemRef]:
    """The folder's problems of `levels` (as the sweep selects them) in a fixed shuffled order, so that a
    stream's levels interleave."""
    chosen = selected(folder, levels, None)
    random.Random(0).shuffle(chosen)
    return [ProblemRef(p.name, p.source, builtin=False) for p in chosen]


def measure_mixed(config: Config, corpus: list[Submission], root: Path, index: int,
                  args: argparse.Namespace) -> list[RunReport]:
    """One server, fresh data dir, two passes: every problem new, then the same submissions again (forced). A
    pass cut at --timeout is reported on the verdicts that came in, and ends the run: the rest of it would still
    be graded during the next pass."""
    data_dir = root / f"data-{index}"
    print(f"# {config.label}: starting kernelgrade serve (data dir {data_dir})", flush=True)
    with served(data_dir, data_dir / f"run-{index}.db", config.env, config.src, config.place,
                _progress_label(config, args)) as service:
        service.register_problems(corpus)
        reports = []
        for label, force in (("first pass", False), ("second pass", True)):
            print(f"# {config.label}, {label}: submitting {len(corpus)} submissions", flush=True)
            with Sampler() as memory:
                graded = service.grade(corpus, force=force, timeout_s=args.timeout, cut=True)
            named = f"{config.label}, {label}" if _compares(args) else label
            cut_s = time.time() if len(graded) < len(corpus) else None
            if cut_s is not None:
                named += f" ({len(graded)}/{len(corpus)})"
            if graded:
                reports.append(summarize(replace(config, label=named), graded, service.devices(), None, cut_s,
                                         memory.summary()))
            if cut_s is not None:
                break
    return reports


def measure(config: Config, corpus: list[Submission], root: Path, index: int,
            args: argparse.Namespace) -> list[RunReport]:
    """One configuration on a server of its own. --prebuilt: every configuration shares the data dir (its
    compile cache), each with a database of its own; otherwise each gets a fresh data dir, builds included."""
    data_dir = root / ("data" if args.prebuilt else f"data-{index}")
    database = data_dir / f"run-{index}.db"
    print(f"# {config.label}: starting kernelgrade serve (data dir {data_dir})", flush=True)
    with served(data_dir, database, config.env, config.src, config.place, _progress_label(config, args)) as service:
        service.register_problems(corpus)
        build_pass = _build_pass(service, corpus, args.timeout) if args.prebuilt else None
        print(f"# {config.label}: submitting {len(corpus)} submissions", flush=True)
        with Sampler() as memory:
            graded = service.grade(corpus, force=args.prebuilt, timeout_s=args.timeout)
        return [summarize(config, graded, service.devices(), build_pass, host_memory=memory.summary())]


def _progress_label(config: Config, args: argparse.Namespace) -> str:
    """Progress lines of configurations run at once are told apart by their label."""
    return config.label if args.side_by_side else ""


def build_ahead(corpus: list[Submission], device: str, data_dir: Path, jobs: int, config: Config) -> None:
    """Every submission built `jobs` at a time into the compile cache the server will use (data_dir/cache,
    keyed by source and target, the precompiled header included), so its build pass finds them all built."""
    launcher = make_launcher("auto")
    pch = Settings.from_env(dict(config.env)).precompiled_headers
    work = data_dir / "work"
    started = time.perf_counter()

    def build(submission: Submission) -> None:
        request = EvalRequest(problem=problem_spec(submission.problem, device), submission=submission.source,
                              cache_dir=data_dir / "cache", work_root=work, compile_jobs=2,
                              precompiled_header=pch)
        precompile(request, launcher)

    print(f"# building {len(corpus)} submissions, {jobs} at a time", flush=True)
    with ThreadPoolExecutor(jobs) as pool:
        list(pool.map(build, corpus))
    print(f"# built in {time.perf_counter() - started:.0f} s", flush=True)


def problem_spec(problem: ProblemRef, device: str) -> ProblemSpec:
    """As the service sees the problem it was given (its device kind is the run's)."""
    from kernelgrade.problems import load_problem_source

    return replace(load_problem_source(problem.source, problem.name).spec(), device=DeviceKind(device))


def _build_pass(service: Service, corpus: list[Submission], timeout_s: float) -> float:
    print(f"# build pass: grading all {len(corpus)} once so the measured pass finds them built", flush=True)
    graded = service.grade(corpus, force=False, timeout_s=timeout_s)
    return max(g.finished_s for g in graded) - min(g.created_s for g in graded)


def in_process_run(corpus: list[Submission], device_kind: str, build_dir: Path) -> InProcessSummary:
    """KernelBench's protocol for every correct submission of the stream, on its case's own source (the same
    kernel without the variant line), built once before anything is timed."""
    # Builds of this process go to a directory of its own, not the user's ~/.cache/torch_extensions.
    os.environ["TORCH_EXTENSIONS_DIR"] = str(build_dir)
    device = torch.device("cuda", 0) if device_kind == "cuda" else torch.device("cpu")
    wanted = [s for s in corpus if s.expect is Expect.CORRECT]
    bases = {s.case: s for s in wanted}
    print(f"# in-process: building {len(bases)} kernels", flush=True)
    builds_s = _build_bases(list(bases.values()))
    graded: list[InProcess] = []
    for submission in wanted:
        graded.append(grade(submission.case, submission.problem.source, submission.base_source, device))
    return InProcessSummary.of(graded, builds_s)


def _build_bases(bases: list[Submission]) -> float:
    """Builds every kernel, as many at a time as there are CPUs: one at a time, the CUDA kernels of a 24-problem
    mixed stream took over five minutes on a GPU host. Spawned, not forked: this process may hold a CUDA context.
    Two kernels whose extensions share a name are built again when graded, as they were one at a time (torch
    numbers the versions of a name within a process)."""
    started = time.perf_counter()
    jobs = max(1, min(len(bases), len(os.sched_getaffinity(0))))
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(build, [submission.base_source for submission in bases]))
    return time.perf_counter() - started


def _setting(item: str) -> tuple[str, str]:
    key, sep, value = item.partition("=")
    if not sep or not key.startswith("KERNELGRADE_"):
        raise SystemExit(f"error: --env takes KERNELGRADE_NAME=VALUE, not {item!r}")
    return key, value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--n", type=int, default=0,
                        help=f"distinct submissions (default {CUDA_DEFAULT_N} on cuda, {CPU_DEFAULT_N} on cpu)")
    parser.add_argument("--compile-errors", type=float, default=0.15, help="fraction that does not build")
    parser.add_argument("--wrong", type=float, default=0.15, help="fraction with wrong output values")
    parser.add_argument("--prebuilt", action="store_true", help="measure already-built submissions only")
    parser.add_argument("--mixed", type=Path, default=None, metavar="FOLDER",
                        help="a mixed stream over the distinct problems of a KernelBench folder, in two passes")
    parser.add_argument("--levels", type=lambda text: [int(v) for v in text.split(",")], default=[1, 2],
                        help="with --mixed: the levels to take problems from (default 1,2)")
    parser.add_argument("--build-jobs", type=int, default=0, help="with --prebuilt: build J at a time beforehand")
    compare = parser.add_mutually_exclusive_group()
    compare.add_argument("--compare-warm", action="store_true",
                         help="run with KERNELGRADE_WARM_CHILDREN=0, then 8 (the default), and print them side by side")
    compare.add_argument("--before", type=Path, metavar="SRC",
                         help="serve first from SRC (another checkout's src/, e.g. of the commit before a change),"
                              " then from this tree, and print them side by side")
    compare.add_argument("--compare", action="append", default=[], metavar="KERNELGRADE_X=A,B",
                         help="one server per value of the setting, side by side; repeated: one per combination")
    parser.add_argument("--side-by-side", action="store_true",
                        help="run the compared configurations at once, each on a GPU and an equal share of the CPUs"
                             " of its own: a ratio under the same host conditions, in the time of one")
    parser.add_argument("--both-orders", action="store_true",
                        help="run the compared configurations one after another, then again in reverse order")
    parser.add_argument("--env", action="append", default=[], metavar="KERNELGRADE_X=V",
                        help="a setting for the server (repeatable)")
    parser.add_argument("--timeout", type=float, default=7200.0,
                        help="seconds to wait for one pass's verdicts (--mixed: then report those that came in)")
    parser.add_argument("--no-in-process", action="store_true", help="skip KernelBench's in-process protocol")
    parser.add_argument("--json", type=Path, default=None, help="also write every number here")
    return parser


if __name__ == "__main__":
    sys.exit(main())
