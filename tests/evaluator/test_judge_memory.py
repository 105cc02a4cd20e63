"""What the judge sizes by the memory it needs: the float64 oracle's placement, and the time a child gets to
write large outputs."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kernelgrade.evaluator import PrecisionPolicy, compare
from kernelgrade.evaluator.child import run_child
from kernelgrade.evaluator.compare import Comparison, Expected
from kernelgrade.evaluator.compare_memory import MemoryBudget
from kernelgrade.evaluator.device_cache import KEEP_CACHED_BYTES, leave_room
from kernelgrade.evaluator.host import device_room
from kernelgrade.evaluator.host.device_room import compare_in_room
from kernelgrade.evaluator.host.reference import oracle_bytes
from kernelgrade.evaluator.host.reference_cache import References
from kernelgrade.evaluator.host.warm import Warm
from kernelgrade.evaluator.judge import pipeline
from kernelgrade.evaluator.judge.pipeline import evaluate
from kernelgrade.evaluator.request import MOVE_BYTES_PER_S, Limits
from kernelgrade.evaluator.result import Verdict
from kernelgrade.evaluator.sandbox.launcher import SubprocessLauncher
from kernelgrade.evaluator.wire import tensorfile
from kernelgrade.evaluator.wire.protocol import CallRequest
from kernelgrade.evaluator.wire.replies import CallReply
from tests.conftest import RequestFactory
from tests.evaluator.test_warm import ADD

MiB = 1024**2


def test_the_oracle_needs_its_floating_inputs_weights_and_outputs_in_float64() -> None:
    model = torch.nn.Linear(256, 128)  # 128 x 256 weights and 128 biases
    inputs = [torch.ones(64, 256), torch.arange(10), 3]  # the integer tensor and the int are used as they are
    fp32_output_bytes = 64 * 128 * 4
    expected = (64 * 256 + 128 * 256 + 128) * 8 + 64 * 128 * 8
    assert oracle_bytes(inputs, model, fp32_output_bytes) == expected


def test_moving_tensors_adds_time_in_proportion_to_their_size() -> None:
    assert Limits.moving(10.0, 0) == 10.0
    assert Limits.moving(10.0, 6 * 1024 * MiB) == pytest.approx(10.0 + 6 * 1024 * MiB / MOVE_BYTES_PER_S)
    # A 6 GiB output at a busy disk's rate: the fast profile's 10 s call limit alone timed its write out.
    assert Limits.moving(10.0, 6 * 1024 * MiB) > 30.0


def test_off_cuda_the_judge_leaves_no_room_to_measure() -> None:
    assert leave_room(torch.device("cpu")) == 0


def test_a_comparison_the_device_has_no_room_for_is_made_again_on_the_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """The device running out mid-comparison (another process took memory after the plan) is the judge's to
    absorb: it compares again in host chunks and gives the whole comparison's result."""
    budgets: list[int | None] = []

    def out_of_memory_on_the_device(outputs: list[torch.Tensor], expected: Expected, policy: PrecisionPolicy,
                                    budget: MemoryBudget | None = None) -> Comparison:
        budgets.append(budget.device_bytes if budget else None)
        if budget is None or budget.device_bytes != 0:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 7.20 GiB.")
        return compare.compare_values(outputs, expected, policy, budget)

    x = torch.randn(3000, dtype=torch.float32)
    expected = Expected([x.clone()], [x.double()])
    out = [x + 1e-3]
    monkeypatch.setattr(device_room, "compare_values", out_of_memory_on_the_device)
    comparison = compare_in_room(out, expected, PrecisionPolicy(), torch.device("cpu"))
    whole = compare.compare_values(out, expected, PrecisionPolicy())
    assert budgets == [None, 0]
    assert (comparison.passed, comparison.code, comparison.message) == (whole.passed, whole.code, whole.message)
    # Sums of squares in chunks: equal up to the order of summation.
    assert comparison.rel_error_vs_oracle == pytest.approx(whole.rel_error_vs_oracle, rel=1e-9)


@pytest.mark.gpu
def test_the_judge_hands_unused_cache_back_to_the_driver() -> None:
    device = torch.device("cuda")
    block = torch.empty(512 * MiB, dtype=torch.uint8, device=device)
    del block
    assert torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device) >= 512 * MiB
    free = leave_room(device)
    assert torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device) <= 256 * MiB
    assert 0 < free <= torch.cuda.mem_get_info(device)[1]


ADD_SUBMISSION = """
import torch
class ModelNew(torch.nn.Module):
    def forward(self, a, b):
        return a + b
"""


def test_the_judge_running_out_of_memory_lets_go_of_what_it_keeps_before_the_retry(
        make_request: RequestFactory, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    launcher = SubprocessLauncher()
    warm = Warm.nothing(launcher, tmp_path / "work", tmp_path / "cache")
    warm.references = References()
    kept = warm.references.reference(ADD, torch.device("cpu"), 0)
    assert warm.references.reference(ADD, torch.device("cpu"), 0) is kept

    def out_of_memory(*_args: object) -> None:
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 8.00 GiB")

    monkeypatch.setattr(pipeline, "_run_stages", out_of_memory)
    try:
        result = evaluate(make_request(ADD, ADD_SUBMISSION), launcher, warm=warm)
    finally:
        warm.close()
    assert result.verdict is Verdict.ERROR and result.failure is not None
    assert result.failure.code == "grader_error" and "OutOfMemoryError" in result.failure.detail
    assert warm.references.reference(ADD, torch.device("cpu"), 0) is not kept


@pytest.mark.gpu
def test_a_run_child_hands_back_what_a_large_call_left_cached(tmp_path: Path) -> None:
    """The child's side on a real device: a call with a 1 GiB output leaves no more than KEEP_CACHED_BYTES of
    unused cache behind for the judge to miss."""
    device = torch.device("cuda")
    harness = run_child.Harness()
    harness.device = device  # warm() would register the hold page its judge makes: none here
    harness.model = lambda a: a * 2
    inputs = tmp_path / "in.kgt"
    tensorfile.save(inputs, [torch.ones(256 * MiB)])  # 1 GiB of fp32, cloned and doubled by the call
    reply, _seconds = harness.handle(CallRequest(inputs, tmp_path / "out.kgt", settle_s=0.0))
    assert isinstance(reply, CallReply)
    assert torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device) <= KEEP_CACHED_BYTES
