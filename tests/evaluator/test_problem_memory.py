"""A problem's memory, found on torch's meta device before anyone submits."""

from __future__ import annotations

import pytest

from kernelgrade.evaluator.compare_memory import ORACLE_BYTES_PER_ELEMENT
from kernelgrade.evaluator.problem_memory import estimate
from kernelgrade.evaluator.timing_room import TimingFootprint

SOURCE = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.linear = nn.Linear(n, 2 * n, bias=False)

    def forward(self, x, k):
        return self.linear(x), torch.argmax(x, dim=1)

def get_inputs():
    return [torch.randn(100_000, 64), 3]

def get_init_inputs():
    return [64]
'''


def test_each_part_is_counted_from_shapes_alone() -> None:
    need = estimate(SOURCE, "linear_argmax")
    rows, n = 100_000, 64
    assert need.inputs == rows * n * 4
    assert need.weights == 2 * n * n * (4 + 8)  # fp32 and the oracle's float64 copy
    assert need.outputs == 2 * (rows * 2 * n * 4 + rows * 8)  # the reference's and the candidate's
    assert need.oracle == rows * n * 8 + rows * 2 * n * 8  # integer outputs get no float64 copy
    assert need.comparison == rows * 2 * n * ORACLE_BYTES_PER_ELEMENT  # integers are compared without copies
    assert need.total == need.least + need.comparison
    # Both run children while timing, on one input set: the candidate's keeps outputs for the re-check.
    one_set, outputs = rows * n * 4, need.outputs // 2
    assert need.timing == TimingFootprint(one_set, outputs).both(1) == 4 * one_set + 5 * outputs


def test_a_reference_that_cannot_run_on_meta_raises() -> None:
    with pytest.raises(Exception):  # noqa: B017, PT011 - whatever the problem's own code raises
        estimate(SOURCE.replace("return self.linear(x), ", "x.sum().item()\n        return self.linear(x), "), "x")
