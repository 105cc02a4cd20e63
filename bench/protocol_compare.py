"""kernelgrade's timing protocol beside KernelBench's, on the same callables in one process, for the GPU host.

    PYTHONPATH=src python3 bench/protocol_compare.py [NAME...] [--suite S] [--no-kernels] [--out FILE]
                                                     [--flags strict|pytorch_default]
    PYTHONPATH=src python3 bench/protocol_compare.py --under-load builds|burn [NAME...]

--under-load times the small kernels and a few built-in problems (NAME... to choose others) quiet and with
every core busy, in one run (bench/under_load.py says how); without it:

For every built-in GPU problem the reference is timed three ways, back to back on the same inputs:
- kernelgrade: the judge's loop (kernelgrade.evaluator.timing: warm-up, fresh input values per rep, flush
  enqueued with the start event behind it, no synchronize before the call, adaptive reps), reporting the
  median, its host-inclusive median and how many reps may hold host time;
- kernelgrade before: the same loop with a device synchronize between the flush and the start event, as the
  judge timed until this change (the sample then includes the host's dispatch of forward());
- KernelBench: synchronize, queue a 256 MB flush fill, start event, call, end event, synchronize; 3 warm-up
  calls, 100 trials after one dropped, mean.
Then a few small hand-written CUDA kernels (5-50 us) against their PyTorch references, with the speedup
each protocol gives. The target: reference medians within 2 % of KernelBench's figure, kernel speedups within
10 %. Everything runs under the precision switches --flags names (strict fp32 unless told). Prints numbers;
asserts nothing. Imports only the standard library, torch and kernelgrade.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from kernelgrade.evaluator import timing
from kernelgrade.evaluator.host.environment import describe
from kernelgrade.evaluator.host.reference import Reference
from kernelgrade.evaluator.integrity import precision_flags
from kernelgrade.evaluator.request import TimingFlags, TimingParams
from kernelgrade.problems import Problem, builtin_problems

SEED = 42
MIB = 1024 * 1024
# KernelBench's protocol, as it states it: a 256 MB flush, 3 warm-ups, 100 trials after one dropped.
KB_FLUSH_BYTES = 256 * MIB
KB_WARMUP = 3
KB_TRIALS = 100
# Built-in problems --under-load times when none are named: from microseconds (relu) to milliseconds (matmul).
UNDER_LOAD_PROBLEMS = ("relu", "softmax", "layernorm", "sum_reduction", "conv2d", "square_matmul")


@dataclass(frozen=True)
class Timed:
    ours_median_ms: float
    ours_ci95: tuple[float, float]
    ours_reps: int
    host_median_ms: float | None
    host_bound_reps: int
    before_median_ms: float
    kernelbench_mean_ms: float


@dataclass(frozen=True)
class Row:
    name: str
    reference: Timed
    candidate: Timed | None = None


Call = Callable[..., Any]


def kernelbench_mean(fn: Call, args: Sequence[Any], device: torch.device) -> float:
    flush = torch.empty(KB_FLUSH_BYTES // 4, dtype=torch.int32, device=device)
    for _ in range(KB_WARMUP):
        fn(*args)
    times = [_event_time(fn, args, device, flush.zero_, synchronize_after_flush=False)
             for _ in range(KB_TRIALS + 1)]
    return statistics.fmean(times[1:])


def synchronized_median(fn: Call, args: Sequence[Any], device: torch.device, flusher: timing.Flusher,
                        reps: int) -> float:
    """kernelgrade's loop as it was: flush, device synchronize, start event, call, end event, synchronize."""
    return statistics.median(_event_time(fn, args, device, flusher.flush, synchronize_after_flush=True)
                             for _ in range(reps))


def _event_time(fn: Call, args: Sequence[Any], device: torch.device, flush: Callable[[], Any],
                synchronize_after_flush: bool) -> float:
    """One sample: synchronize, flush, (synchronize,) start event, call, end event, synchronize."""
    torch.cuda.synchronize(device)
    flush()
    if synchronize_after_flush:
        torch.cuda.synchronize(device)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn(*args)
    end.record()
    torch.cuda.synchronize(device)
    return float(start.elapsed_time(end))


def time_three_ways(fn: Call, args: list[Any], device: torch.device, params: TimingParams) -> Timed:
    flusher = timing.Flusher(device, params.flush_bytes or timing.default_flush_bytes(device))
    with torch.no_grad():
        timing.warm_up(fn, [args], device, params)
        raw = timing.measure(fn, [args], device, params, flusher)
        stats = timing.summarize(raw.device_ms, raw.stop_reason, raw.wall_ms, raw.host_bound_reps)
        before = synchronized_median(fn, args, device, flusher, stats.n)
        kb = kernelbench_mean(fn, args, device)
    return Timed(stats.median_ms, (stats.ci95_low_ms, stats.ci95_high_ms), stats.n, stats.host_median_ms,
                 stats.host_bound_reps, before, kb)


def problem_row(problem: Problem, device: torch.device, params: TimingParams) -> Row:
    reference, inputs = problem_inputs(problem, device)
    row = Row(problem.name, time_three_ways(reference.model, inputs, device, params))
    del reference, inputs
    torch.cuda.empty_cache()
    return row


KERNELS = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void relu_kernel(const float* x, float* y, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaxf(x[i], 0.0f);
}
__global__ void add_relu_kernel(const float* a, const float* b, float* y, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaxf(a[i] + b[i], 0.0f);
}
__global__ void scale_shift_kernel(const float* x, float* y, float s, float t, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * s + t;
}
static dim3 grid(long n) { return dim3((n + 255) / 256); }
torch::Tensor relu(torch::Tensor x) {
    auto y = torch::empty_like(x);
    relu_kernel<<<grid(x.numel()), 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), x.numel());
    return y;
}
torch::Tensor add_relu(torch::Tensor a, torch::Tensor b) {
    auto y = torch::empty_like(a);
    add_relu_kernel<<<grid(a.numel()), 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        a.data_ptr<float>(), b.data_ptr<float>(), y.data_ptr<float>(), a.numel());
    return y;
}
torch::Tensor scale_shift(torch::Tensor x) {
    auto y = torch::empty_like(x);
    scale_shift_kernel<<<grid(x.numel()), 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), 1.5f, 0.25f, x.numel());
    return y;
}
"""
DECLARATIONS = ("torch::Tensor relu(torch::Tensor x); torch::Tensor add_relu(torch::Tensor a, torch::Tensor b);"
                " torch::Tensor scale_shift(torch::Tensor x);")


def kernel_cases(device: torch.device) -> list[tuple[str, Call, Call, list[Any]]]:
    """Small hand-written kernels (about 5-50 us on an H100) beside their eager PyTorch references."""
    from torch.utils.cpp_extension import load_inline

    started = time.monotonic()
    ext = load_inline(name="kg_protocol_compare_kernels", cpp_sources=DECLARATIONS, cuda_sources=KERNELS,
                      functions=["relu", "add_relu", "scale_shift"], verbose=False)
    print(f"# small kernels built in {time.monotonic() - started:.0f} s", flush=True)
    cases: list[tuple[str, Call, Call, list[Any]]] = []
    for n in (1 << 20, 1 << 22, 1 << 24):
        x, y = torch.randn(n, device=device), torch.randn(n, device=device)
        cases.append((f"relu {n >> 20}M", torch.relu, ext.relu, [x]))
        cases.append((f"add+relu {n >> 20}M", lambda a, b: torch.relu(a + b), ext.add_relu, [x, y]))
        cases.append((f"x*1.5+0.25 {n >> 20}M", lambda v: v * 1.5 + 0.25, ext.scale_shift, [x]))
    return cases


def kernel_rows(device: torch.device, params: TimingParams) -> list[Row]:
    return [Row(name, time_three_ways(ref, args, device, params), time_three_ways(kernel, args, device, params))
            for name, ref, kernel, args in kernel_cases(device)]


def problem_inputs(problem: Problem, device: torch.device) -> tuple[Reference, list[Any]]:
    reference = Reference(problem.spec(), device, SEED)
    # Created on the device: the values do not matter for a time, and the CPU generator would take minutes
    # for the 3 GiB inputs of the largest problems.
    with torch.random.fork_rng(devices=[device]), device:
        torch.manual_seed(SEED)
        inputs = list(reference.module.get_inputs())
    return reference, inputs


def _pct(ours: float, theirs: float) -> str:
    return f"{100.0 * (ours / theirs - 1.0):+.1f}%"


def reference_line(row: Row) -> str:
    t = row.reference
    host = f"{t.host_median_ms:.4f}" if t.host_median_ms is not None else "-"
    return (f"{row.name:<24} {t.ours_median_ms:>10.4f} [{t.ours_ci95[0]:.4f}, {t.ours_ci95[1]:.4f}]"
            f" {t.ours_reps:>5} {t.kernelbench_mean_ms:>10.4f} {_pct(t.ours_median_ms, t.kernelbench_mean_ms):>8}"
            f" {t.before_median_ms:>10.4f} {_pct(t.before_median_ms, t.kernelbench_mean_ms):>8} {host:>9}"
            f" {t.host_bound_reps:>5}")


def kernel_line(row: Row) -> str:
    ref, cand = row.reference, row.candidate
    assert cand is not None
    ours = ref.ours_median_ms / cand.ours_median_ms
    kb = ref.kernelbench_mean_ms / cand.kernelbench_mean_ms
    before = ref.before_median_ms / cand.before_median_ms
    return (f"{row.name:<22} {ref.ours_median_ms * 1e3:>8.1f} {cand.ours_median_ms * 1e3:>8.1f} {ours:>7.3f}"
            f" {ref.kernelbench_mean_ms * 1e3:>8.1f} {cand.kernelbench_mean_ms * 1e3:>8.1f} {kb:>7.3f}"
            f" {_pct(ours, kb):>8} {before:>7.3f} {_pct(before, kb):>8} {cand.host_bound_reps:>4}")


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if not torch.cuda.is_available():
        print("error: no CUDA device here; this compares GPU timing protocols", file=sys.stderr)
        return 2
    flags = TimingFlags(args.flags)
    device, params = torch.device("cuda", 0), TimingParams(flags=flags)
    precision_flags.apply(flags)
    env = describe(device, "none")
    print(f"# {env.device_name} | driver {env.driver} | torch {env.torch} | CUDA {env.cuda} | {flags.described}")
    if args.under_load:
        return _under_load(args, device, params)
    problems = [p for p in builtin_problems() if p.device.value == "cuda"
                and args.suite in (None, p.suite) and (not args.names or p.name in args.names)]
    rows = _references(problems, device, params)
    if not args.no_kernels:
        rows += _kernels(device, params)
    if args.out:
        args.out.write_text(json.dumps({"environment": asdict(env), "rows": [asdict(r) for r in rows]}, indent=2))
    return 0


def _under_load(args: argparse.Namespace, device: torch.device, params: TimingParams) -> int:
    from under_load import Case, compare, print_tables

    names = set(args.names or UNDER_LOAD_PROBLEMS)
    cases = [] if args.no_kernels else [Case(*c) for c in kernel_cases(device)]
    for problem in builtin_problems():
        if problem.device.value == "cuda" and problem.name in names:
            reference, inputs = problem_inputs(problem, device)
            cases.append(Case(problem.name, reference.model, None, inputs))
    print_tables(cases, compare(cases, device, params, args.under_load))
    return 0


def _references(problems: list[Problem], device: torch.device, params: TimingParams) -> list[Row]:
    print(f"{'problem':<24} {'ours_ms':>10} {'95% CI of median':>20} {'reps':>5} {'kb_ms':>10} {'ours/kb':>8}"
          f" {'before_ms':>10} {'bef/kb':>8} {'host_ms':>9} {'hostb':>5}")
    rows = []
    for problem in problems:
        rows.append(problem_row(problem, device, params))
        print(reference_line(rows[-1]), flush=True)
    return rows


def _kernels(device: torch.device, params: TimingParams) -> list[Row]:
    rows = kernel_rows(device, params)
    print(f"{'kernel':<22} {'ref_us':>8} {'ker_us':>8} {'ours_x':>7} {'kbref_us':>8} {'kbker_us':>8} {'kb_x':>7}"
          f" {'ours/kb':>8} {'before_x':>7} {'bef/kb':>8} {'hostb':>4}")
    for row in rows:
        print(kernel_line(row), flush=True)
    return rows


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="kernelgrade's timing protocol beside KernelBench's.")
    parser.add_argument("names", nargs="*", metavar="NAME", help="only these problems")
    parser.add_argument("--suite", default=None, help="only problems of this suite")
    parser.add_argument("--no-kernels", action="store_true", help="skip the small hand-written kernels")
    parser.add_argument("--out", type=Path, default=None, help="also write the rows as JSON here")
    parser.add_argument("--flags", choices=[f.value for f in TimingFlags], default=TimingFlags.STRICT.value,
                        help="PyTorch's precision switches while timing (default: strict fp32)")
    parser.add_argument("--under-load", choices=("builds", "burn"), default=None,
                        help="time quiet and with every core busy (torch/extension.h compiles, or spinning processes)")
    return parser


if __name__ == "__main__":
    sys.exit(main())
