"""Finding degenerate problems by running their reference, the way the judge will.

A problem is degenerate when a kernel can pass it without computing what it asks for: its output barely
changes between seeds (return a stored answer), is so close to zero that zeros pass the tolerance, or does
not depend on one of its inputs (never read it). Each check runs the reference through
`kernelgrade.evaluator.host.reference.Reference` on a few seeds and asks how much of the output such a shortcut
would get right under the problem's elementwise atol/rtol. All of it is a failure; most of it a warning.
The judge's own preconditions are checked on the way: finite outputs, a deterministic reference, and
inputs left unmodified (the judge rejects kernels that modify inputs, so the reference must not).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import torch

from kernelgrade.evaluator.compare import flatten_outputs
from kernelgrade.evaluator.host.reference import Reference, derive_seed, to_device
from kernelgrade.evaluator.integrity import precision_flags
from kernelgrade.evaluator.request import PrecisionPolicy
from kernelgrade.evaluator.timing import clone_inputs
from kernelgrade.problems.loader import Problem

CONSTANT_OUTPUT = "constant_output"
ZEROS_PASS = "zeros_pass"
IGNORED_INPUT = "ignored_input"
NON_FINITE_OUTPUT = "non_finite_output"
NONDETERMINISTIC = "nondeterministic"
MUTATES_INPUT = "mutates_input"
OUTPUT_NOT_TENSOR = "output_not_tensor"

# A shortcut that gets this share of the elements right is worth a warning even though the judge,
# which needs every element right, would still fail it.
WARN_FRACTION = 0.9
DEFAULT_SEEDS = 3
# The judge's default TrialPlan seed, so the audited weights are the ones graded.
WEIGHT_SEED = 42


class AuditSeverity(StrEnum):
    FAIL = "fail"  # a kernel that skips the work passes: the problem cannot grade
    WARN = "warn"  # it fails, but gets most of the output right: the problem grades weakly


@dataclass(frozen=True)
class AuditFinding:
    problem: str
    code: str
    severity: AuditSeverity
    message: str
    # The share of output elements the shortcut gets right, where the check measures one.
    fraction: float | None = None


@dataclass(frozen=True)
class _Run:
    inputs: list[Any]  # on the CPU, as get_inputs() made them
    outputs: list[torch.Tensor]  # on the audited device


def audit_problem(problem: Problem, device: torch.device, seeds: int = DEFAULT_SEEDS) -> list[AuditFinding]:
    """Run the reference on `seeds` (at least 2) seeds plus one perturbation per input; return what is wrong.

    The fraction checks use the elementwise atol/rtol of the problem's precision policy: the part every
    policy applies and the only part KernelBench-style tolerances have."""
    if seeds < 2:
        raise ValueError("the audit needs at least 2 seeds to compare outputs across seeds")
    # The judge grades under strict fp32; a reference audited with TF32 on would not be the one graded.
    precision_flags.set_strict()
    return _Audit(problem, device).run(seeds)


def agreement(candidate: torch.Tensor, reference: torch.Tensor, policy: PrecisionPolicy) -> float:
    """The share of `candidate`'s elements within the policy's atol/rtol of `reference` (0 on a shape or
    dtype mismatch). Integer outputs must match exactly, as the judge requires."""
    if candidate.shape != reference.shape or candidate.dtype != reference.dtype:
        return 0.0
    if reference.numel() == 0:
        return 1.0
    if not (reference.is_floating_point() or reference.is_complex()):
        return int(torch.count_nonzero(candidate == reference)) / reference.numel()
    # The tolerance policy's test (KernelBench's), |out - ref| <= atol + rtol * |ref|, whatever the problem's
    # policy: a shortcut it accepts fools KernelBench-style graders. Reusing buffers: torch.isclose takes twice as
    # long and outputs here can be a GiB. Like the judge, any value passes where the reference is NaN/Inf.
    bound = reference.abs().mul_(policy.rtol).add_(policy.atol)
    close = (candidate - reference).abs().le_(bound).logical_or_(~torch.isfinite(reference))
    return int(torch.count_nonzero(close)) / reference.numel()


class _Audit:
    def __init__(self, problem: Problem, device: torch.device) -> None:
        self.name = problem.name
        self.policy = problem.precision
        self.device = device
        self.reference = Reference(problem.spec(), device, WEIGHT_SEED)
        self.findings: list[AuditFinding] = []

    def run(self, seeds: int) -> list[AuditFinding]:
        runs = [self._run(self.reference.make_inputs(derive_seed(0, "audit", i, ""))) for i in range(seeds)]
        if any(not isinstance(o, torch.Tensor) for r in runs for o in r.outputs):
            self._add(OUTPUT_NOT_TENSOR, AuditSeverity.FAIL, "forward() returns something other than tensors")
            return self.findings
        self._check_finite(runs)
        self._check_deterministic(runs[0])
        self._check_constant(runs)
        self._check_zeros(runs)
        self._check_inputs_used(runs[0], runs[1])
        return self.findings

    def _run(self, inputs: list[Any]) -> _Run:
        # Cloned: on the CPU `.to(device)` is the same tensor, and the reference must not see its own writes.
        device_inputs = clone_inputs(to_device(inputs, self.device))
        outputs = [o.detach() if isinstance(o, torch.Tensor) else o
                   for o in flatten_outputs(self.reference.forward(device_inputs))]
        self._check_unmodified(inputs, device_inputs)
        return _Run(inputs, outputs)

    def _add(self, code: str, severity: AuditSeverity, message: str, fraction: float | None = None) -> None:
        if all(f.code != code or f.message != message for f in self.findings):
            self.findings.append(AuditFinding(self.name, code, severity, message, fraction))

    def _graded(self, code: str, fraction: float, what: str, why: str) -> None:
        """A FAIL when the shortcut gets every element right, a WARN when it gets most of them."""
        if fraction >= 1.0:
            self._add(code, AuditSeverity.FAIL, f"{what}: {why} passes every element", fraction)
        elif fraction >= WARN_FRACTION:
            self._add(code, AuditSeverity.WARN, f"{what}: {why} passes {fraction:.1%} of the elements", fraction)

    def _tolerance(self) -> str:
        return f"atol={self.policy.atol:g} rtol={self.policy.rtol:g}"

    def _where(self, index: int, count: int) -> str:
        return f"output {index}" if count > 1 else "the output"

    def _check_unmodified(self, originals: Sequence[Any], after: Sequence[Any]) -> None:
        for i, (before, now) in enumerate(zip(originals, after, strict=True)):
            if isinstance(before, torch.Tensor) and not torch.equal(now, before.to(now.device)):
                self._add(MUTATES_INPUT, AuditSeverity.FAIL,
                          f"the reference modifies input {i} in place; the judge rejects kernels that do")

    def _check_finite(self, runs: Sequence[_Run]) -> None:
        for run in runs:
            for j, out in enumerate(run.outputs):
                if out.is_floating_point() and not bool(torch.isfinite(out).all()):
                    self._add(NON_FINITE_OUTPUT, AuditSeverity.FAIL,
                              f"{self._where(j, len(run.outputs))} has NaN or Inf values,"
                              " where the judge passes any value")

    def _check_deterministic(self, base: _Run) -> None:
        again = self._run(base.inputs)
        for j, (first, second) in enumerate(zip(base.outputs, again.outputs, strict=True)):
            fraction = agreement(second, first, self.policy)
            if fraction < 1.0:
                self._add(NONDETERMINISTIC, AuditSeverity.FAIL,
                          f"{self._where(j, len(base.outputs))} changes between two calls on the same inputs"
                          f" ({1 - fraction:.1%} of the elements beyond {self._tolerance()}): an exact kernel"
                          " would fail", fraction)

    def _check_constant(self, runs: Sequence[_Run]) -> None:
        """A kernel that returns the first seed's output, whatever its inputs."""
        first = runs[0].outputs
        for j, stored in enumerate(first):
            fraction = min(agreement(stored, later.outputs[j], self.policy) for later in runs[1:])
            self._graded(CONSTANT_OUTPUT, fraction,
                         f"{self._where(j, len(first))} is nearly the same on every seed",
                         f"returning one seed's output ({self._tolerance()})")

    def _check_zeros(self, runs: Sequence[_Run]) -> None:
        count = len(runs[0].outputs)
        for j in range(count):
            fraction = min(agreement(torch.zeros_like(r.outputs[j]), r.outputs[j], self.policy) for r in runs)
            self._graded(ZEROS_PASS, fraction, f"{self._where(j, count)} is close to zero",
                         f"returning zeros ({self._tolerance()})")

    def _check_inputs_used(self, base: _Run, other: _Run) -> None:
        """A kernel that never reads input i: its output is the one computed with a stale input i."""
        for i, value in enumerate(base.inputs):
            replacement = _perturbed(value, other.inputs[i])
            if replacement is None:
                continue
            inputs = [replacement if k == i else v for k, v in enumerate(base.inputs)]
            changed = self._run(inputs).outputs
            agreeing = sum(agreement(old, new, self.policy) * new.numel()
                           for old, new in zip(base.outputs, changed, strict=True))
            total = sum(new.numel() for new in changed)
            self._graded(IGNORED_INPUT, agreeing / total if total else 1.0,
                         f"the output barely depends on input {i}", f"ignoring input {i} ({self._tolerance()})")


def _perturbed(value: Any, other_seed: Any) -> torch.Tensor | None:
    """Input i from another seed, or, where get_inputs() makes the same tensor on every seed, that tensor
    with noise added. None where there is nothing to perturb (a scalar, a fixed integer tensor)."""
    if not isinstance(value, torch.Tensor) or not isinstance(other_seed, torch.Tensor):
        return None
    if other_seed.shape == value.shape and not torch.equal(other_seed, value):
        return other_seed
    if not value.is_floating_point():
        return None
    noise = torch.randn(value.shape, generator=torch.Generator().manual_seed(0), dtype=value.dtype)
    return value + noise
