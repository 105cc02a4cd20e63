"""What a long-lived judge holds on its device between evaluations of a mixed stream, against its budget.

    PYTHONPATH=src:bench python3 bench/judge_memory.py KERNELBENCH_FOLDER [--levels 2] [--problems 18]
                                                      [--again 9] [--device cuda]

Replays the judge's own work for a stream over a KernelBench folder's problems, in the order
bench/throughput.py --mixed posts them: `--problems` problems, then the first `--again` of them a second time.
For each it does what an evaluation does in the judge, with one warm reference cache (References) throughout:
the correctness trials (made as TrialInputs makes them, and compared against a copy of the expected outputs),
the timing input sets, and the re-check's reference runs on them; nothing runs in a child. After each it
prints the judge's allocations on the device once its unused cache is handed back (what a candidate's child
cannot have), their peak during the evaluation, and the budget of kept references (an eighth of the device).
A judge that lets go of problems as it should stays near the budget; one that does not climbs past it.
Prints numbers; asserts nothing. With --device cpu the problems run on the CPU and every figure is 0: a check that
the replay runs.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import Counter
from pathlib import Path

import torch

from kernelgrade.evaluator import timing
from kernelgrade.evaluator.device_cache import allocated, leave_room
from kernelgrade.evaluator.host.device_room import compare_in_room
from kernelgrade.evaluator.host.reference import Reference, save_timing_sets, to_device
from kernelgrade.evaluator.host.reference_cache import References, device_budget
from kernelgrade.evaluator.judge.correctness import TrialInputs, trial_seeds
from kernelgrade.evaluator.judge.job import on_device
from kernelgrade.evaluator.request import TimingParams, TrialPlan
from throughput import kernelbench_problems, problem_spec
from throughput_corpus import ProblemRef

GIB = 1024**3


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    device = torch.device(args.device)
    problems = kernelbench_problems(args.folder, args.levels)[:args.problems]
    stream = problems + problems[:args.again]
    references = References()
    cuda = device.type == "cuda"
    name = torch.cuda.get_device_name(device) if cuda else "cpu"
    print(f"# {name}: kept references' budget {device_budget(device) / GIB:.1f} GiB")
    print(f"{'#':>3} {'problem':<44} {'s':>6} {'peak GiB':>9} {'held GiB':>9} {'reserved':>9} {'free':>7}  trials")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as work:
        for index, problem in enumerate(stream):
            if cuda:
                torch.cuda.reset_peak_memory_stats(device)
            prepared = _evaluate(references, problem, device, Path(work))
            free = leave_room(device)
            peak = torch.cuda.max_memory_allocated(device) if cuda else 0
            reserved = torch.cuda.memory_reserved(device) if cuda else 0
            print(f"{index:>3} {problem.name[:44]:<44} {time.perf_counter() - started:>6.1f} {peak / GIB:>9.1f}"
                  f" {allocated(device) / GIB:>9.1f} {reserved / GIB:>9.1f} {free / GIB:>7.1f}  "
                  + ", ".join(f"{count} {how}" for how, count in sorted(prepared.items())), flush=True)


def _evaluate(references: References, problem: ProblemRef, device: torch.device, work: Path) -> Counter[str]:
    """The judge's side of one evaluation of the problem's reference against itself; how many of its trials
    were computed, read from the store or kept in memory."""
    spec = problem_spec(problem, device.type)
    plan = TrialPlan()
    reference = references.reference(spec, device, plan.seed)
    trials = trial_seeds(plan, "", references.secret_seeds(spec, device, plan.secret_trials))
    prepared: Counter[str] = Counter()
    with on_device(device), TrialInputs(reference, trials) as ahead:
        for trial in trials:
            data = ahead.take(trial.index)
            prepared[data.prepared] += 1
            compare_in_room([t.clone() for t in data.expected.refs], data.expected, spec.precision, device)
        _recheck(reference, device, work, plan.seed)
    return prepared


def _recheck(reference: Reference, device: torch.device, work: Path, seed: int) -> None:
    """The timing sets, and the reference's expected outputs on each timed output the re-check samples."""
    sets, paths = save_timing_sets(reference, work, TimingParams().input_sets, seed, "")
    for k in range(len(sets) + timing.SAMPLED_OUTPUTS):
        expected = reference.expected(to_device(sets[k % len(sets)], device))
        compare_in_room([t.clone() for t in expected.refs], expected, reference.problem.precision, device)
    for path in paths:
        path.unlink(missing_ok=True)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="a KernelBench checkout's KernelBench/ folder")
    parser.add_argument("--levels", type=lambda text: [int(v) for v in text.split(",")], default=[2])
    parser.add_argument("--problems", type=int, default=18, help="distinct problems in the stream")
    parser.add_argument("--again", type=int, default=9, help="then the first this many again")
    parser.add_argument("--device", default="cuda")
    return parser


if __name__ == "__main__":
    main()
