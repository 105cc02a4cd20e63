"""What grades a judge's jobs: evaluate(), prepare() and measure_baseline() with the run children and references
the judge keeps warm between them.

A judge grades in its own thread (InProcessGrader) or hands each job to a process of its own
(grading_process.py). Either way the judge claims, records and reports progress; only where the evaluator's
Python work runs differs. The judge's side of grading is Python too (reading the children's replies, making
the reference's outputs and oracles, comparing): two judges in one interpreter take turns at it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from kernelgrade.config import Settings
from kernelgrade.evaluator import (
    CompiledBaseline,
    EvalRequest,
    EvalResult,
    Launcher,
    Preparation,
    ProgressFn,
    Warm,
    evaluate,
    measure_baseline,
    prepare,
)
from kernelgrade.evaluator.sandbox.cpus import on_cpus


class Grader(Protocol):
    @property
    def keeps_trials(self) -> bool:
        """Whether problems can be prepared ahead (the grader keeps references and trials between jobs)."""
        ...

    def start(self) -> None: ...

    def evaluate(self, request: EvalRequest, progress: ProgressFn) -> EvalResult: ...

    def prepare(self, request: EvalRequest) -> Preparation: ...

    def measure_baseline(self, request: EvalRequest) -> CompiledBaseline: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class GraderSpec:
    """All a grader is made from: plain data, as a grading process gets it."""

    settings: Settings
    launcher: Launcher
    kind: str  # the judge's device kind: "cuda" or "cpu"
    measure: tuple[int, ...] = ()  # the judge's own cores (worker/cores.py); empty: no placement
    builds: tuple[int, ...] = ()  # where its spare children start
    device_lock: Path | None = None  # the lock file of the judge's GPU (evaluator/host/device_lock.py)

    @property
    def spares(self) -> int:
        """A CPU judge keeps at most one spare: its spares start beside builds on the same cores."""
        warm = self.settings.warm_children
        return warm if self.kind == "cuda" else min(1, warm)

    @property
    def keeps_trials(self) -> bool:
        """A grader with spares also keeps references and their trials between jobs (Warm.keeping)."""
        return self.spares > 0


class InProcessGrader:
    """Grades in the calling thread, placed on the judge's own cores with the run children it starts."""

    def __init__(self, spec: GraderSpec) -> None:
        self.spec = spec
        settings = spec.settings
        self.warm = (Warm.keeping(spec.launcher, settings.work_root, settings.cache_dir, spec.spares,
                                  settings.host_lock, spec.builds, spec.device_lock) if spec.keeps_trials else None)

    @property
    def keeps_trials(self) -> bool:
        return self.spec.keeps_trials

    def start(self) -> None:
        """Nothing to start: the warm children started with the grader."""

    def evaluate(self, request: EvalRequest, progress: ProgressFn) -> EvalResult:
        with on_cpus(self.spec.measure):
            return evaluate(request, self.spec.launcher, progress, self.warm)

    def prepare(self, request: EvalRequest) -> Preparation:
        if self.warm is None:
            return Preparation(request.problem.name, note="this judge keeps no trials between evaluations")
        with on_cpus(self.spec.measure):
            return prepare(request, self.warm)

    def measure_baseline(self, request: EvalRequest) -> CompiledBaseline:
        with on_cpus(self.spec.measure):
            return measure_baseline(request, self.spec.launcher, self.warm)

    def close(self) -> None:
        if self.warm is not None:
            self.warm.close()
