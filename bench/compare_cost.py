"""What one output comparison costs the judge: compare_values on an honest fp32 output against its float64 oracle.

    PYTHONPATH=src:bench python3 bench/compare_cost.py [--elements 536870912] [--reps 9] [--device cuda]

A gigabyte output is compared about a dozen times an evaluation (seven trials, five re-checked timed outputs), so
its comparison's memory passes are a visible part of a mixed stream's device time. The output is the reference's
own times (1 + 1e-7 x noise): it passes, as most do, and takes the path most comparisons take. Prints the median
and the range of `--reps` comparisons (the first, which may size the allocator's cache, not counted), and the
device's peak allocation above the inputs during one. Before and after a change to the comparison: run it with
each tree's src/ on PYTHONPATH, one after the other, on the same machine. Prints numbers; asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence

import torch

from kernelgrade.evaluator import PrecisionPolicy
from kernelgrade.evaluator.compare import Expected, compare_values

MIB = 1024 * 1024


def _case(elements: int, device: torch.device) -> tuple[torch.Tensor, Expected]:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(elements, generator=generator)
    ref, oracle = x * 1.5 + 0.25, x.double() * 1.5 + 0.25
    out = ref * (1 + 1e-7 * torch.randn(elements, generator=generator))
    return out.to(device), Expected([ref.to(device)], [oracle.to(device)])


def _timed(out: torch.Tensor, expected: Expected, device: torch.device) -> tuple[float, bool]:
    _synchronize(device)
    start = time.perf_counter()
    passed = compare_values([out], expected, PrecisionPolicy()).passed
    _synchronize(device)
    return time.perf_counter() - start, passed


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--elements", type=int, default=512 * MIB, help="the output's elements (default: 2 GiB)")
    parser.add_argument("--reps", type=int, default=9)
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    out, expected = _case(args.elements, device)
    _timed(out, expected, device)
    held = torch.cuda.memory_allocated(device) if device.type == "cuda" else 0
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    timed = [_timed(out, expected, device) for _ in range(args.reps)]
    times = [seconds for seconds, _ in timed]
    peak = torch.cuda.max_memory_allocated(device) - held if device.type == "cuda" else 0
    median, passed = statistics.median(times) * 1e3, sum(ok for _, ok in timed)
    print(f"compare_values, {args.elements:,} fp32 elements on {args.device}: median {median:.1f} ms"
          f" (range {min(times) * 1e3:.1f}-{max(times) * 1e3:.1f}) over {args.reps}; peak {peak / MIB:,.0f} MiB;"
          f" passed {passed} of {args.reps}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
