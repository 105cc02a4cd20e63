"""The judge's trusted side of a problem: seeded inputs, reference outputs, the float64 oracle.

None of this runs in the submission's process; expected outputs never leave the judge.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from kernelgrade.evaluator.child import tensorfile
from kernelgrade.evaluator.child.submission_module import load_problem_module
from kernelgrade.evaluator.compare import flatten_outputs
from kernelgrade.evaluator.request import PrecisionKind, ProblemSpec
from kernelgrade.evaluator.timing import device_synchronize


def derive_seed(seed: int, kind: str, index: int, secret: str) -> int:
    """Seeds for trials and timing sets; with a secret, nobody outside the deployment can predict them."""
    digest = hashlib.sha256(f"{secret}|{seed}|{kind}|{index}".encode()).hexdigest()
    return int(digest[:15], 16)


def to_device(values: Sequence[Any], device: torch.device) -> list[Any]:
    return [v.to(device) if isinstance(v, torch.Tensor) else v for v in values]


class Reference:
    def __init__(self, problem: ProblemSpec, device: torch.device, weight_seed: int) -> None:
        self.problem = problem
        self.device = device
        self.module = load_problem_module(problem.source, problem.name)
        self.init_inputs = list(self.module.get_init_inputs())
        torch.manual_seed(weight_seed)
        self.model = self.module.Model(*self.init_inputs).to(device)
        self._oracle_model: torch.nn.Module | None = None

    def make_inputs(self, seed: int) -> list[Any]:
        """The problem's own get_inputs() under a private seed, on the CPU as the format says."""
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            return list(self.module.get_inputs())

    def forward(self, inputs: Sequence[Any]) -> Any:
        with torch.no_grad():
            out = self.model(*inputs)
        device_synchronize(self.device)
        return out

    def outputs(self, inputs: Sequence[Any]) -> tuple[list[torch.Tensor], list[torch.Tensor] | None]:
        """Reference outputs and, where the policy asks for it, the float64 oracle's; both stay on the
        judge's device, where comparing them is fast."""
        refs = [t.detach() for t in flatten_outputs(self.forward(to_device(inputs, self.device)))]
        if not self._wants_oracle(refs):
            return refs, None
        return refs, self._oracle(inputs)

    def _wants_oracle(self, refs: list[torch.Tensor]) -> bool:
        policy = self.problem.precision.kind
        return policy is not PrecisionKind.TOLERANCE and any(r.dtype == torch.float32 for r in refs)

    def _oracle(self, inputs: Sequence[Any]) -> list[torch.Tensor]:
        if self._oracle_model is None:
            self._oracle_model = copy.deepcopy(self.model).double()
        upcast = [v.double() if isinstance(v, torch.Tensor) and v.is_floating_point() else v
                  for v in to_device(inputs, self.device)]
        with torch.no_grad():
            out = self._oracle_model(*upcast)
        return [t.detach() for t in flatten_outputs(out)]


def save_timing_sets(reference: Reference, work_dir: Path, count: int, seed: int,
                     secret: str) -> tuple[list[list[Any]], list[Path]]:
    """An evaluation's timing input sets (TIMING.md), as values for the judge and as files for a child."""
    sets = [reference.make_inputs(derive_seed(seed, "timing", k, secret)) for k in range(count)]
    paths = [work_dir / f"timing_{k}.kgt" for k in range(len(sets))]
    for path, values in zip(paths, sets, strict=True):
        tensorfile.save(path, values)
    return sets, paths
