"""The audit runs real references: it must catch each kind of degenerate problem and pass a healthy one."""

from __future__ import annotations

import pytest
import torch

from kernelgrade.evaluator import PrecisionPolicy
from kernelgrade.problems import Problem, load_problem_source
from kernelgrade.problems.audit import (
    CONSTANT_OUTPUT,
    IGNORED_INPUT,
    MUTATES_INPUT,
    NON_FINITE_OUTPUT,
    NONDETERMINISTIC,
    ZEROS_PASS,
    AuditFinding,
    AuditSeverity,
    agreement,
    audit_problem,
)

CPU = torch.device("cpu")


def problem(forward: str, inputs: str, init: str = "", arguments: str = "x") -> Problem:
    """A CPU problem whose forward(arguments) returns `forward` and whose get_inputs() returns `inputs`."""
    source = f'''"""An audit test problem."""
import torch
import torch.nn as nn

KERNELGRADE = {{"device": "cpu"}}


class Model(nn.Module):
    def __init__(self):
        super().__init__()
{init}
    def forward(self, {arguments}):
        return {forward}


def get_inputs():
    return {inputs}


def get_init_inputs():
    return []
'''
    return load_problem_source(source, "audited")


def codes(findings: list[AuditFinding]) -> dict[str, AuditSeverity]:
    return {f.code: f.severity for f in findings}


def test_a_healthy_problem_has_no_findings() -> None:
    healthy = problem("torch.relu(a + b)", "[torch.randn(64, 64), torch.randn(64, 64)]", arguments="a, b")
    assert audit_problem(healthy, CPU) == []


def test_a_problem_with_learned_weights_is_healthy() -> None:
    linear = problem("self.linear(x)", "[torch.randn(32, 16)]", init="        self.linear = nn.Linear(16, 8)\n")
    assert audit_problem(linear, CPU) == []


def test_output_constant_across_seeds_fails() -> None:
    # The maximum of a million uniform samples is within 1e-4 of 1.0 on every seed.
    findings = audit_problem(problem("x.max(dim=1).values", "[torch.rand(4, 1_000_000)]"), CPU)
    assert codes(findings)[CONSTANT_OUTPUT] is AuditSeverity.FAIL
    constant = next(f for f in findings if f.code == CONSTANT_OUTPUT)
    assert constant.fraction == 1.0
    assert constant.problem == "audited"


def test_output_so_small_that_zeros_pass_fails() -> None:
    # Softmax over 65536 uniform logits: every probability is below the absolute tolerance.
    findings = audit_problem(problem("torch.softmax(x, dim=-1)", "[torch.rand(4, 65536)]"), CPU)
    assert codes(findings)[ZEROS_PASS] is AuditSeverity.FAIL


def test_output_mostly_zero_warns() -> None:
    # About 98% of relu(x - 2) is exactly zero: zeros pass most elements but not all.
    findings = audit_problem(problem("torch.relu(x - 2.0)", "[torch.randn(256, 256)]"), CPU)
    zeros = next(f for f in findings if f.code == ZEROS_PASS)
    assert zeros.severity is AuditSeverity.WARN
    assert zeros.fraction is not None and 0.9 <= zeros.fraction < 1.0


def test_output_that_ignores_an_input_fails_naming_it() -> None:
    ignores = problem("torch.relu(a) * 2", "[torch.randn(64, 64), torch.randn(64, 64)]", arguments="a, b")
    findings = audit_problem(ignores, CPU)
    assert [(f.code, f.severity) for f in findings] == [(IGNORED_INPUT, AuditSeverity.FAIL)]
    assert "input 1" in findings[0].message


def test_an_input_that_is_the_same_on_every_seed_is_still_perturbed() -> None:
    uses_fixed = problem("a * b", "[torch.randn(64), torch.ones(64)]", arguments="a, b")
    assert audit_problem(uses_fixed, CPU) == []
    ignores_fixed = problem("a * 3", "[torch.randn(64), torch.ones(64)]", arguments="a, b")
    assert codes(audit_problem(ignores_fixed, CPU)) == {IGNORED_INPUT: AuditSeverity.FAIL}


def test_a_random_reference_is_nondeterministic() -> None:
    findings = audit_problem(problem("x + torch.rand_like(x)", "[torch.randn(64, 64)]"), CPU)
    assert codes(findings)[NONDETERMINISTIC] is AuditSeverity.FAIL


def test_a_reference_that_modifies_its_input_fails() -> None:
    findings = audit_problem(problem("x.mul_(2)", "[torch.randn(64, 64)]"), CPU)
    assert codes(findings)[MUTATES_INPUT] is AuditSeverity.FAIL


def test_non_finite_outputs_fail() -> None:
    findings = audit_problem(problem("torch.log(x)", "[torch.randn(64, 64)]"), CPU)
    assert codes(findings)[NON_FINITE_OUTPUT] is AuditSeverity.FAIL


def test_the_audit_needs_two_seeds() -> None:
    with pytest.raises(ValueError, match="2 seeds"):
        audit_problem(problem("x * 2", "[torch.randn(4)]"), CPU, seeds=1)


POLICY = PrecisionPolicy(atol=1e-4, rtol=1e-4)


def test_agreement_uses_the_judges_elementwise_tolerance() -> None:
    reference = torch.ones(4)
    assert agreement(reference + 1.9e-4, reference, POLICY) == 1.0  # within atol + rtol * |ref| = 2e-4
    assert agreement(reference + 2.1e-4, reference, POLICY) == 0.0
    assert agreement(torch.tensor([1.0, 1.0, 5.0, 1.0]), reference, POLICY) == 0.75
    # As in the judge, a non-finite reference value accepts anything.
    assert agreement(torch.tensor([5.0, 5.0]), torch.tensor([float("nan"), 1.0]), POLICY) == 0.5


def test_agreement_of_integers_is_exact_and_of_mismatched_shapes_is_zero() -> None:
    assert agreement(torch.tensor([1, 2, 3]), torch.tensor([1, 2, 4]), POLICY) == pytest.approx(2 / 3)
    assert agreement(torch.ones(3), torch.ones(4), POLICY) == 0.0
    assert agreement(torch.ones(3, dtype=torch.float64), torch.ones(3), POLICY) == 0.0
