"""Integrity policy end to end on small pure-Python submissions: the torch-ops policy, where the secret seed
material comes from, and results carrying the new records through JSON."""

from __future__ import annotations

import dataclasses

from kernelgrade.evaluator import EvalResult, TrialPlan, Verdict, evaluate
from kernelgrade.evaluator.request import TorchOps
from kernelgrade.evaluator.roofline_floor import RooflineFloor
from kernelgrade.evaluator.sandbox.launcher import SubprocessLauncher
from kernelgrade.problems import find_builtin
from tests.conftest import RequestFactory

TORCH_SUBMISSION = '''
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        return torch.relu(a + b)
'''


def add_relu(torch_ops: TorchOps = TorchOps.REPORT):  # type: ignore[no-untyped-def]
    problem = find_builtin("add_relu")
    assert problem is not None
    return dataclasses.replace(problem.spec(), torch_ops=torch_ops)


def test_torch_ops_are_reported_by_default_and_flagged_where_forbidden(make_request: RequestFactory) -> None:
    reported = evaluate(make_request(add_relu(), TORCH_SUBMISSION, measure_timing=False), SubprocessLauncher())
    assert reported.verdict is Verdict.CORRECT
    assert "static_torch_ops" in {f.code for f in reported.findings}
    forbidden = evaluate(make_request(add_relu(TorchOps.FORBID), TORCH_SUBMISSION, measure_timing=False),
                         SubprocessLauncher())
    assert forbidden.verdict is Verdict.FLAGGED
    assert forbidden.failure is not None and forbidden.failure.code == "static_torch_ops"
    assert "forbids torch operations" in forbidden.failure.message


def test_secret_trials_stay_secret_without_a_deployment_secret(make_request: RequestFactory) -> None:
    unset = evaluate(make_request(add_relu(), TORCH_SUBMISSION, measure_timing=False, trials=TrialPlan(secret="")),
                     SubprocessLauncher())
    assert unset.verdict is Verdict.CORRECT and unset.seed_secret.startswith("per-evaluation")
    assert unset.wall_s >= unset.seconds > 0  # its own wall time covers its stages and what lies between them
    assert [t.secret for t in unset.trials] == [False] * 5 + [True] * 2
    deployed = evaluate(make_request(add_relu(), TORCH_SUBMISSION, measure_timing=False), SubprocessLauncher())
    assert deployed.seed_secret == "deployment"


def test_new_records_survive_json() -> None:
    result = EvalResult(Verdict.FLAGGED, "p", "h", "fp32",
                        roofline=RooflineFloor(0.5, 0.5, 0.04, "H100 SXM", 1.5, "fp32"), seed_secret="deployment",
                        wall_s=2.5)
    assert EvalResult.from_json_dict(result.to_json_dict()) == result
