"""Where a warm judge's evaluations of chosen problems spend their device time, part by part.

    PYTHONPATH=src:bench python3 bench/problem_stages.py KERNELBENCH_FOLDER [--levels 2] [--problems 12]
                                                         [--only 2_,17_] [--times 2] [--device cuda] [--sample]

Takes the problems as bench/throughput.py --mixed posts them (`--problems` of `--levels`, in its order) or those
whose names start with one of `--only`. Each problem is prepared as an idle judge prepares it, then its reference
renamed ModelNew is evaluated `--times` times by one judge that keeps its children, references and trials
between evaluations, as a server's judge does. Prints each evaluation's verdict, its device seconds (the stages
a run child holds the device for, as throughput.py counts them) and the seconds of every stage part summed over
the evaluation (7 correctness trials give one `correctness:call` figure), how its trials' expected outputs were
had (computed, stored, kept), its speedup with its 95 % interval, and its findings; on a GPU also the pinned
buffers (pinned_buffers.py) made during it, each mapped and registered with CUDA, and the most lent at once.
The second evaluation of a problem is one whose problem a judge has just seen; a stream's second pass sees each
problem after many others, so its figures lie between the two.

With --sample, each problem's evaluations are followed by where the judge's threads spent its time, by
function (bench/thread_samples.py: a sampling profile of the judge's side; the run children are processes of their
own).

Prints numbers; asserts nothing. With --device cpu the problems run on the CPU: a check that it runs. The judge
takes KERNELGRADE_* variables as a server does (KERNELGRADE_TIMING_PROFILE=fast, say); its data dir is a fresh
temporary one.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Sequence
from contextlib import nullcontext
from pathlib import Path

from kernelgrade.config import Settings
from kernelgrade.evaluator import pinned_buffers
from kernelgrade.evaluator.host.warm import Warm
from kernelgrade.evaluator.judge.pipeline import evaluate
from kernelgrade.evaluator.judge.prepare import prepare
from kernelgrade.evaluator.request import DeviceKind, EvalRequest
from kernelgrade.evaluator.result import EvalResult
from kernelgrade.evaluator.sandbox.launcher import Launcher
from kernelgrade.evaluator.sandbox.levels import make_launcher
from kernelgrade.evaluator.speedup_interval import speedup_bounds
from kernelgrade.worker.grader import GraderSpec
from kernelgrade.worker.grading_request import RequestBuilder
from thread_samples import ThreadSamples
from throughput import kernelbench_problems, problem_spec
from throughput_corpus import ProblemRef, as_model_new
from throughput_report import DEVICE_STAGES

GiB = 1024**3


def main(argv: Sequence[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="problem-stages-") as root:
        settings = Settings.from_env(data_dir=Path(root))
        launcher = make_launcher(args.sandbox, allow_unsandboxed=args.sandbox == "none")
        # As many spares as a service's judge of the device keeps (a CPU judge one), and at least one: a judge that
        # keeps nothing would compute every trial again.
        spares = max(1, GraderSpec(settings, launcher, args.device).spares)
        warm = Warm.keeping(launcher, settings.work_root, settings.cache_dir, spares)
        try:
            for problem in chosen(args):
                with ThreadSamples() if args.sample else nullcontext() as samples:
                    _prepared_and_evaluated(_request(settings, problem, args.device), launcher, warm, args.times)
                if samples is not None:
                    print(f"-- where the judge's threads spent {problem.name}'s time", *samples.report(), sep="\n")
        finally:
            warm.close()


def _prepared_and_evaluated(request: EvalRequest, launcher: Launcher, warm: Warm, times: int) -> None:
    started = time.perf_counter()
    pinned = PinnedUse.start() if request.problem.device is DeviceKind.CUDA else None
    prepared = prepare(request, warm)
    print(f"== {request.problem.name}: prepared in {time.perf_counter() - started:.2f} s"
          f"{' (' + prepared.note + ')' if prepared.note else ''}{pinned.line() if pinned else ''}", flush=True)
    for index in range(times):
        pinned = PinnedUse.start() if pinned else None
        result = evaluate(request, launcher, warm=warm)
        print(described(index, result) + (pinned.line() if pinned else ""), flush=True)


class PinnedUse:
    """The pinned buffer pool's work during one act (pinned_buffers.py): buffers made (each mapped and registered
    with CUDA, on the judge's path where a trial waits for it) and the most lent at once."""

    def __init__(self, made: int, made_bytes: int) -> None:
        self.made, self.made_bytes = made, made_bytes

    @classmethod
    def start(cls) -> PinnedUse:
        pool = pinned_buffers.pool()
        pool.reset_peak()
        return cls(pool.made, pool.made_bytes)

    def line(self) -> str:
        pool = pinned_buffers.pool()
        made = (pool.made_bytes - self.made_bytes) / GiB
        return (f"\n   pinned buffers: {pool.made - self.made} made ({made:.1f} GiB), at most"
                f" {pool.peak_lent_bytes / GiB:.1f} GiB lent at once, {pool.free_bytes() / GiB:.1f} GiB free")


def chosen(args: argparse.Namespace) -> list[ProblemRef]:
    problems = kernelbench_problems(args.folder, args.levels)
    if not args.only:
        return problems[:args.problems]
    prefixes = tuple(p.lower() for p in args.only.split(","))
    return [p for p in problems if p.name.startswith(prefixes)]


def _request(settings: Settings, problem: ProblemRef, device: str) -> EvalRequest:
    return RequestBuilder(settings).build(problem_spec(problem, device), as_model_new(problem.source), 0)


def described(index: int, result: EvalResult) -> str:
    """One evaluation: its verdict, device seconds, trials, speedup and findings; each stage part's seconds summed."""
    parts: dict[str, float] = {}
    for label, seconds in result.stage_seconds:
        parts[label] = parts.get(label, 0.0) + seconds
    device = sum(parts.get(stage, 0.0) for stage in DEVICE_STAGES)
    extra = dict(result.extra)
    trials = ", ".join(f"{extra[key]} {key.removeprefix('trials_')}" for key in
                       ("trials_computed", "trials_stored", "trials_kept") if extra.get(key, "0") != "0")
    listed = "  ".join(f"{label} {seconds:.2f}" for label, seconds in parts.items() if seconds >= 0.005)
    found = ", ".join(f"{f.code} ({f.severity.value})" for f in result.findings)
    region = f"\n   shared region: {extra['shared_region']}" if "shared_region" in extra else ""
    return (f"-- {index}: {result.verdict.value}, device {device:.2f} s, trials {trials or 'none'}"
            f"{_speedup(result)}{', findings ' + found if found else ''}\n   {listed}{region}")


def _speedup(result: EvalResult) -> str:
    bounds = speedup_bounds(result.reference_timing, result.candidate_timing)
    if result.speedup is None or bounds is None:
        return ""
    return f", speedup {result.speedup:.3f}x ({bounds[0]:.3f}-{bounds[1]:.3f})"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="a KernelBench checkout's KernelBench/ folder")
    parser.add_argument("--levels", type=lambda text: [int(v) for v in text.split(",")], default=[2])
    parser.add_argument("--problems", type=int, default=12, help="the stream's first this many problems")
    parser.add_argument("--only", default="", help="instead: the problems whose names start with these (a,b,...)")
    parser.add_argument("--times", type=int, default=2, help="evaluations of each problem, one after another")
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--sample", action="store_true",
                        help="also print where the judge's threads spent each problem's time (a sampling profile)")
    parser.add_argument("--sandbox", default="auto",
                        help="the run children's sandbox (kernelgrade's levels); none: unsandboxed, for a profiler"
                             " that follows children")
    return parser


if __name__ == "__main__":
    main()
