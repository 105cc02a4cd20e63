"""One evaluation's fixed facts and its clock: what every stage reads, and the seconds each one took."""

from __future__ import annotations

import dataclasses
import secrets
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from kernelgrade.evaluator.host.reference import Reference
from kernelgrade.evaluator.host.removals import removals
from kernelgrade.evaluator.host.warm import Warm
from kernelgrade.evaluator.judge.progress import Progress, ProgressFn
from kernelgrade.evaluator.request import EvalRequest, PrecisionKind, PrecisionPolicy, TimingFlags, TimingParams
from kernelgrade.evaluator.result import Stage
from kernelgrade.evaluator.sandbox.launcher import Launcher
from kernelgrade.evaluator.wire import tensorfile


@dataclass
class Job:
    request: EvalRequest
    launcher: Launcher
    progress: ProgressFn
    device: torch.device
    secret: str
    work_dir: Path
    warm: Warm
    stage: Stage = Stage.VALIDATE  # the stage a grader fault is charged to
    stage_seconds: list[tuple[str, float]] = field(default_factory=list)
    earlier_dirs: list[Path] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)

    @classmethod
    def start(cls, request: EvalRequest, launcher: Launcher, progress: ProgressFn, warm: Warm) -> Job:
        device = judge_device(request)
        # Secret trials and timing inputs must be unpredictable even where the deployment set no secret.
        secret = request.trials.secret or secrets.token_hex(16)
        request.work_root.mkdir(parents=True, exist_ok=True)
        work_dir = Path(tempfile.mkdtemp(prefix="job-", dir=request.work_root))
        return cls(request, launcher, progress, device, secret, work_dir, warm)

    def reference(self) -> Reference:
        """The problem's reference: the judge's kept one where it keeps them."""
        problem, seed = self.request.problem, self.request.trials.seed
        if self.warm.references is None:
            return Reference(problem, self.device, seed)
        return self.warm.references.reference(problem, self.device, seed)

    def secret_seeds(self) -> list[int] | None:
        """Seeds for the secret trials from the judge's refreshed pool; None where it keeps no references
        (the trials then derive from the secret)."""
        if self.warm.references is None:
            return None
        return self.warm.references.secret_seeds(self.request.problem, self.device, self.request.trials.secret_trials)

    def adopt(self, work_dir: Path) -> None:
        """From here on the job works in the run child's dir (the only one that child sees)."""
        self.earlier_dirs.append(self.work_dir)
        self.work_dir = work_dir

    @property
    def timing_params(self) -> TimingParams:
        return timing_params(self.request)

    @property
    def timed_policy(self) -> PrecisionPolicy:
        """Timed outputs are re-checked at the precision the timing switches allow: under PyTorch's defaults
        a submission's own cuDNN calls run in TF32, as the reference's do."""
        policy = self.request.problem.precision
        if self.timing_params.flags is TimingFlags.STRICT or policy.kind is not PrecisionKind.FP32:
            return policy
        return dataclasses.replace(policy, kind=PrecisionKind.TF32)

    @property
    def gpu_index(self) -> int | None:
        return self.device.index if self.device.type == "cuda" else None

    @property
    def child_device(self) -> str:
        """The child sees only its own GPU, so it is always the first one there."""
        return "cuda:0" if self.device.type == "cuda" else "cpu"

    def using_device(self) -> AbstractContextManager[None]:
        """Held while the job works on its GPU outside its measurements (run_children.py, `using`)."""
        return self.warm.children.using(cpu=self.device.type == "cpu")

    @contextmanager
    def in_stage(self, stage: Stage, message: str) -> Iterator[None]:
        self.stage = stage
        self.report(stage, message)
        with self.timed(stage.value):
            yield

    @contextmanager
    def timed(self, label: str) -> Iterator[None]:
        """Adds the block's seconds to stage_seconds under `label` ("stage:part" for a part of a stage)."""
        started = time.monotonic()
        try:
            yield
        finally:
            self.add_seconds(label, started)

    def report(self, stage: Stage, message: str, done: int = 0, total: int = 0) -> None:
        self.progress(Progress(stage, message, done, total))

    def add_seconds(self, label: str, started: float) -> None:
        self.stage_seconds.append((label, round(time.monotonic() - started, 4)))

    @property
    def wall_s(self) -> float:
        """Seconds since the evaluation started."""
        return round(time.monotonic() - self.started, 4)

    def check_device(self) -> None:
        """After a child ends (perhaps with a sticky CUDA error of its own), the judge's device must work."""
        if self.device.type == "cuda":
            probe = torch.ones(16, device=self.device) * 2
            torch.cuda.synchronize(self.device)
            if float(probe.sum()) != 32.0:
                raise RuntimeError("the GPU gave a wrong answer to a health probe after the child ended")

    def cleanup(self) -> None:
        for path in (*self.earlier_dirs, self.work_dir):
            removals().remove(path)


def timing_params(request: EvalRequest) -> TimingParams:
    """The request's protocol, under the precision switches the problem asks to be timed with."""
    return dataclasses.replace(request.timing, flags=request.problem.timing_flags)


def judge_device(request: EvalRequest) -> torch.device:
    """The device the request's problem is graded on: its GPU of the host, or the CPU."""
    cuda = request.problem.device.value == "cuda"
    return torch.device(f"cuda:{request.device_index}") if cuda else torch.device("cpu")


def on_device(device: torch.device) -> AbstractContextManager[object]:
    """Makes `device` the thread's current GPU. Events, streams and synchronize() without a device argument
    go to the current GPU, which is GPU 0 in every new thread: a judge of GPU 1, and each of its helper threads,
    would otherwise time and wait on GPU 0."""
    return torch.cuda.device(device) if device.type == "cuda" else nullcontext()


@dataclass(frozen=True)
class SubmissionFiles:
    """The submission and its constructor inputs, written where the children read them."""

    submission: Path
    init_inputs: Path

    @classmethod
    def write(cls, work_dir: Path, source: str, init_inputs: Sequence[Any]) -> SubmissionFiles:
        files = cls(work_dir / "submission.py", work_dir / "init_inputs.kgt")
        files.submission.write_text(source)
        tensorfile.save(files.init_inputs, init_inputs)
        return files
