"""Where a result says the float64 oracle ran on the host: a large problem's oracle goes there when the device has
no room for it, tens of seconds that the stage's time alone does not explain."""

from __future__ import annotations

import torch

from kernelgrade.evaluator.compare import Expected
from kernelgrade.evaluator.judge.outcome import oracles_on_host
from kernelgrade.evaluator.judge.record import Record

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
