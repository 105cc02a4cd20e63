"""Where a result says the float64 oracle ran on the host: a large problem's oracle goes there when the device has
no room for it, tens of seconds that the stage's time alone does not explain."""

from __future__ import annotations

import pytest
import torch

from kernelgrade.evaluator.compare import Expected
from kernelgrade.evaluator.device_cache import leave_room
from kernelgrade.evaluator.host.reference import Reference
from kernelgrade.evaluator.judge.outcome import oracles_on_host
from kernelgrade.evaluator.judge.record import Record
from kernelgrade.evaluator.request import DeviceKind, ProblemSpec

GPU = torch.device("cuda", 0)


def test_an_oracle_on_the_host_of_a_gpu_problem_is_told_apart() -> None:
    refs = [torch.zeros(4)]
    assert Expected(refs, [torch.zeros(4, dtype=torch.float64)]).oracle_on_host(GPU)
    assert not Expected(refs, [torch.zeros(4, dtype=torch.float64)]).oracle_on_host(torch.device("cpu"))
    assert not Expected(refs).oracle_on_host(GPU)  # the policy wanted no oracle


def test_the_result_counts_them_by_stage_where_there_were_any() -> None:
    record = Record()
    record.oracles_on_host["correctness"] += False
    assert oracles_on_host(record) == ()
    record.oracles_on_host["recheck"] += True
    record.oracles_on_host["recheck"] += True
    assert oracles_on_host(record) == (("oracle_on_host_recheck", "2"),)


# 1 GiB of fp32 input: its float64 oracle needs 4 GiB (its input and output in float64, the output twice).
ELEMENTWISE = ProblemSpec("gib_elementwise", """
import torch
class Model(torch.nn.Module):
    def forward(self, a):
        return a * 2.0 + 1.0
def get_inputs():
    return [torch.rand(1 << 28)]
def get_init_inputs():
    return []
""", device=DeviceKind.CUDA, content_hash="gib-elementwise-v1")


@pytest.mark.gpu
def test_the_oracle_lets_go_of_what_other_problems_keep_before_it_goes_to_the_host() -> None:
    """What the judge keeps for other problems stands in here as a ballast that the release lets go of."""
    ballast = [torch.empty(leave_room(GPU) - (8 << 30), dtype=torch.uint8, device=GPU)]  # 8 GiB left free
    reference = Reference(ELEMENTWISE, GPU, 0, release=ballast.clear)
    expected = reference.expected(reference.make_inputs(1))
    assert not ballast and not expected.oracle_on_host(GPU)
