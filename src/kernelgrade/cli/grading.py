"""Building an EvalRequest from the command line's arguments and the settings, and running it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from kernelgrade.config import Settings
from kernelgrade.evaluator import (
    BaselinePlan,
    DeviceKind,
    EvalRequest,
    EvalResult,
    ProgressFn,
    TimingParams,
    TrialPlan,
    evaluate,
)
from kernelgrade.evaluator.sandbox.levels import SandboxUnavailable
from kernelgrade.problems import ProblemFormatError
from kernelgrade.worker.sandboxing import settings_launcher

# For smoke tests and CI gates that only need a rough speedup: every timing phase stops after 3 s of wall
# time instead of docs/timing.md's 30 s, which matters on CPU problems that never reach the precision target.
QUICK_TIMING = TimingParams(min_reps=10, max_device_ms=1000.0, max_wall_ms=3000.0)


class GradingError(Exception):
    """A usage problem: the problem or submission cannot be read, or the device does not exist."""


def grade_file(problem_ref: str, submission: Path, *, device: str | None = None, timing: bool = True,
               quick: bool = False, sandbox: str | None = None, progress: ProgressFn | None = None,
               settings: Settings | None = None, compiled_baseline: bool = False) -> EvalResult:
    """`compiled_baseline`: also time torch.compile of the reference (no stored one to reuse here)."""
    from kernelgrade.problems import resolve_problem

    settings = settings or Settings.from_env()
    try:
        problem = resolve_problem(problem_ref).spec()
    except (ProblemFormatError, OSError) as exc:
        raise GradingError(str(exc)) from exc
    try:
        source = submission.read_text(errors="surrogateescape")
    except OSError as exc:
        raise GradingError(f"cannot read {submission}: {exc.strerror}") from exc
    kind, index = _device(device, problem.device)
    _require_device(kind, index)
    try:
        launcher = settings_launcher(settings, sandbox)
    except SandboxUnavailable as exc:
        raise GradingError(str(exc)) from exc
    request = EvalRequest(
        problem=replace(problem, device=kind), submission=source, cache_dir=settings.cache_dir,
        work_root=settings.work_root, device_index=index, trials=TrialPlan(secret=settings.seed_secret),
        compile_jobs=settings.compile_jobs, measure_timing=timing, max_source_bytes=settings.max_source_bytes,
        timing=QUICK_TIMING if quick else TimingParams(), compiled_baseline=BaselinePlan(measure=compiled_baseline),
    )
    return evaluate(request, launcher, progress)


def _device(device: str | None, default: DeviceKind) -> tuple[DeviceKind, int]:
    if device is None:
        return default, 0
    kind, _, index = device.partition(":")
    try:
        return DeviceKind(kind), int(index or 0)
    except ValueError as exc:
        raise GradingError(f"unknown device {device!r}; use cpu, cuda or cuda:N") from exc


def _require_device(kind: DeviceKind, index: int) -> None:
    import torch

    if kind is DeviceKind.CUDA and index >= torch.cuda.device_count():
        raise GradingError(f"this problem runs on cuda:{index}, but this machine has"
                           f" {torch.cuda.device_count()} visible CUDA device(s). Run it on a GPU host.")
