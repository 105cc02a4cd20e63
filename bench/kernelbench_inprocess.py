"""KernelBench's way of grading one submission, in this process: no sandbox, no service, no reference timing.

Import the submission (its load_inline finds the build made beforehand and only loads it), seed and build
Model and ModelNew, check 5 trials with torch.allclose(atol=rtol=1e-2), then time ModelNew as KernelBench does
(bench/protocol_compare.kernelbench_mean: synchronize, 256 MB flush, CUDA events, its warm-ups, 100 trials).
On the CPU the same loop uses time.perf_counter, with the judge's CPU cache sweep (a buffer write) in place of
the flush. KernelBench compares against a reference time measured once, elsewhere; none is taken here.
"""

from __future__ import annotations

import statistics
import time
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from kernelgrade.evaluator import timing
from protocol_compare import KB_TRIALS, KB_WARMUP, kernelbench_mean

SEED = 42
KB_CORRECT_TRIALS = 5
KB_TOLERANCE = 1e-2


@dataclass(frozen=True)
class InProcess:
    case: str
    correct: bool
    mean_ms: float | None  # ModelNew's KernelBench time; None when it was not correct
    seconds: float  # wall time of the whole grading, import to last timed call


def run_module(source: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)
    return module


def build(source: str) -> None:
    """Runs a submission's module only for its load_inline build (into TORCH_EXTENSIONS_DIR), in a process of
    its own: builds of different kernels run side by side, and grade() then only loads them."""
    run_module(source, "kb_build")


def grade(case: str, problem_source: str, submission_source: str, device: torch.device) -> InProcess:
    started = time.perf_counter()
    reference = run_module(problem_source, "kb_reference")
    submission = run_module(submission_source, "kb_submission")
    model, model_new = _models(reference, submission, device)
    with torch.no_grad():
        correct = all(_trial(model, model_new, reference, device, t) for t in range(KB_CORRECT_TRIALS))
        mean_ms = _time(model_new, _inputs(reference, device, SEED), device) if correct else None
    return InProcess(case, correct, mean_ms, time.perf_counter() - started)


def _models(reference: types.ModuleType, submission: types.ModuleType,
            device: torch.device) -> tuple[torch.nn.Module, torch.nn.Module]:
    init = [_to(x, device) for x in reference.get_init_inputs()]
    torch.manual_seed(SEED)
    model = reference.Model(*init).to(device)
    torch.manual_seed(SEED)
    return model, submission.ModelNew(*init).to(device)


def _inputs(reference: types.ModuleType, device: torch.device, seed: int) -> list[Any]:
    torch.manual_seed(seed)
    return [_to(x, device) for x in reference.get_inputs()]


def _to(value: Any, device: torch.device) -> Any:
    return value.to(device) if isinstance(value, torch.Tensor) else value


def _trial(model: torch.nn.Module, model_new: torch.nn.Module, reference: types.ModuleType,
           device: torch.device, trial: int) -> bool:
    inputs = _inputs(reference, device, SEED + 1 + trial)
    expected, got = model(*inputs), model_new(*inputs)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return (isinstance(got, torch.Tensor) and got.shape == expected.shape
            and torch.allclose(expected, got, atol=KB_TOLERANCE, rtol=KB_TOLERANCE))


def _time(fn: Callable[..., Any], args: Sequence[Any], device: torch.device) -> float:
    if device.type == "cuda":
        return kernelbench_mean(fn, args, device)
    return cpu_mean(fn, args, device)


def cpu_mean(fn: Callable[..., Any], args: Sequence[Any], device: torch.device) -> float:
    """KernelBench's loop on the CPU: warm-ups, then a cache sweep before each call, one trial dropped."""
    flusher = timing.Flusher(device, timing.default_flush_bytes(device))
    for _ in range(KB_WARMUP):
        fn(*args)
    times = []
    for _ in range(KB_TRIALS + 1):
        flusher.flush()
        started = time.perf_counter()
        fn(*args)
        times.append((time.perf_counter() - started) * 1e3)
    return statistics.fmean(times[1:])
