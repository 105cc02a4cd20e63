"""The timing protocol of TIMING.md, shared by the judge (reference) and the run child (candidate).

Each rep: fresh clone of one of several input sets, cache flush, device sync, start event, forward,
end event, device-wide synchronize. The device clock (CUDA events) is what is reported; the host wall
clock around the same span, taken across a device-wide synchronize, is kept for the cross-check that
catches work hidden on other streams or threads.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from kernelgrade.evaluator.request import TimingParams
from kernelgrade.evaluator.result import TimingStats

MIB = 1024 * 1024

# Captured at import, before any submission code runs in this process, so that a submission replacing
# these attributes does not change the clock the harness reads.
_perf_counter_ns = time.perf_counter_ns
_cuda_synchronize = torch.cuda.synchronize
_Event = torch.cuda.Event
_event_elapsed = torch.cuda.Event.elapsed_time


@dataclass(frozen=True)
class RawSamples:
    device_ms: tuple[float, ...]
    wall_ms: tuple[float, ...]
    stop_reason: str
    clock: str


def default_flush_bytes(device: torch.device) -> int:
    if device.type == "cuda":
        l2 = int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0))
        return max(2 * l2, 256 * MIB)
    return max(2 * _last_level_cache_bytes(), 64 * MIB)


def _last_level_cache_bytes() -> int:
    best = 0
    for index in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            text = (index / "size").read_text().strip()
        except OSError:
            continue
        scale = {"K": 1024, "M": MIB}.get(text[-1:], 1)
        digits = text.rstrip("KM")
        if digits.isdigit():
            best = max(best, int(digits) * scale)
    return best


class Flusher:
    """Evicts caches by writing a buffer larger than them."""

    def __init__(self, device: torch.device, nbytes: int) -> None:
        self.nbytes = nbytes
        self._buffer = torch.empty(nbytes // 4, dtype=torch.int32, device=device)
        self._value = 0

    def flush(self) -> None:
        self._value = (self._value + 1) & 0xFFFF
        self._buffer.fill_(self._value)


def device_synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        _cuda_synchronize(device)


def clone_inputs(inputs: Sequence[Any]) -> list[Any]:
    return [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]


class _Clock:
    """One rep's device and wall time: CUDA events on a GPU, the wall clock on the CPU."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.cuda = device.type == "cuda"

    def run(self, fn: Callable[..., Any], args: list[Any]) -> tuple[float, float, Any]:
        if not self.cuda:
            t0 = _perf_counter_ns()
            out = fn(*args)
            wall = (_perf_counter_ns() - t0) / 1e6
            return wall, wall, out
        start = _Event(enable_timing=True)  # type: ignore[no-untyped-call]
        end = _Event(enable_timing=True)  # type: ignore[no-untyped-call]
        t0 = _perf_counter_ns()
        start.record()
        out = fn(*args)
        end.record()
        _cuda_synchronize(self.device)
        wall = (_perf_counter_ns() - t0) / 1e6
        return float(_event_elapsed(start, end)), wall, out


def warm_up(fn: Callable[..., Any], input_sets: Sequence[Sequence[Any]], device: torch.device,
            params: TimingParams) -> int:
    """Call fn until at least `warmup_calls` calls and `warmup_ms` of time have passed; return the count."""
    clock = _Clock(device)
    calls, spent = 0, 0.0
    while calls < params.warmup_calls or spent < params.warmup_ms:
        _, wall, _ = clock.run(fn, clone_inputs(input_sets[calls % len(input_sets)]))
        spent += wall
        calls += 1
        if calls >= 10 * max(params.warmup_calls, 1) and spent > params.warmup_ms:
            break
    return calls


def measure(
    fn: Callable[..., Any],
    input_sets: Sequence[Sequence[Any]],
    device: torch.device,
    params: TimingParams,
    flusher: Flusher,
    keep_output: Callable[[int, Any], None] | None = None,
) -> RawSamples:
    """Time fn over rotating input sets until the mean is precise enough or a cap is reached."""
    clock = _Clock(device)
    device_ms: list[float] = []
    wall_ms: list[float] = []
    began = _perf_counter_ns()
    reason = "max_reps"
    for rep in range(params.max_reps):
        set_index = rep % len(input_sets)
        args = clone_inputs(input_sets[set_index])
        flusher.flush()
        device_synchronize(device)
        dev, wall, out = clock.run(fn, args)
        device_ms.append(dev)
        wall_ms.append(wall)
        if keep_output is not None:
            keep_output(set_index, out)
        del out, args
        stop = _stop_reason(device_ms, params, (_perf_counter_ns() - began) / 1e6)
        if stop:
            reason = stop
            break
    return RawSamples(tuple(device_ms), tuple(wall_ms), reason, "cuda_event" if clock.cuda else "perf_counter_ns")


def _stop_reason(samples: list[float], params: TimingParams, wall_ms: float) -> str:
    n = len(samples)
    if n >= params.min_reps:
        mean = statistics.fmean(samples)
        if mean > 0 and relative_standard_error(samples) <= params.target_rse:
            return "target_rse"
    if n >= 2 and sum(samples) >= params.max_device_ms:
        return "max_device_time"
    if n >= 2 and wall_ms >= params.max_wall_ms:
        return "max_wall_time"
    return ""


def relative_standard_error(samples: Sequence[float]) -> float:
    if len(samples) < 2:
        return math.inf
    mean = statistics.fmean(samples)
    if mean <= 0:
        return math.inf
    return statistics.stdev(samples) / math.sqrt(len(samples)) / mean


def summarize(samples: Sequence[float], stop_reason: str) -> TimingStats:
    """Median, mean, spread, and a distribution-free 95% confidence interval of the median."""
    ordered = sorted(samples)
    n = len(ordered)
    low, high = median_ci_indices(n)
    return TimingStats(
        n=n,
        median_ms=statistics.median(ordered),
        mean_ms=statistics.fmean(ordered),
        std_ms=statistics.stdev(ordered) if n > 1 else 0.0,
        min_ms=ordered[0],
        max_ms=ordered[-1],
        ci95_low_ms=ordered[low],
        ci95_high_ms=ordered[high],
        stop_reason=stop_reason,
        samples_ms=tuple(samples),
    )


def median_ci_indices(n: int) -> tuple[int, int]:
    """Order-statistic indices bracketing the median with about 95% confidence (normal approximation
    to the binomial); the whole range for small n."""
    half = 1.96 * math.sqrt(n) / 2
    low = max(0, math.floor(n / 2 - half))
    high = min(n - 1, math.ceil(n / 2 + half) - 1)
    return low, max(low, high)
