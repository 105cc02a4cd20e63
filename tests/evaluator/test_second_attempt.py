"""A candidate whose run child ran out of device memory is graded again with nothing kept, and the second
attempt's verdict is the one given (judge/second_attempt.py); the time each attempt spends cleaning up counts."""

from __future__ import annotations

from pathlib import Path

import torch

from kernelgrade.evaluator.host.reference_cache import References
from kernelgrade.evaluator.host.warm import Warm
from kernelgrade.evaluator.judge.pipeline import evaluate
from kernelgrade.evaluator.judge.second_attempt import FIRST_ATTEMPT, deserves_another
from kernelgrade.evaluator.result import EvalResult, Failure, Stage, Verdict
from kernelgrade.evaluator.sandbox.launcher import SubprocessLauncher
from tests.conftest import RequestFactory
from tests.evaluator.test_judge_memory import ADD_SUBMISSION
from tests.evaluator.test_warm import ADD

# Runs out of memory the first time its forward() is called, where `marker` is not yet written: the first
# attempt's child. The launcher is unsandboxed, so the file outlives the child.
ONCE_OUT_OF_MEMORY = """
import pathlib
import torch
MARKER = pathlib.Path({marker!r})
class ModelNew(torch.nn.Module):
    def forward(self, a, b):
        if not MARKER.exists():
            MARKER.write_text("ran out once")
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return a + b
"""

ALWAYS_OUT_OF_MEMORY = """
import torch
class ModelNew(torch.nn.Module):
    def forward(self, a, b):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
"""


def _warm_keeping_a_reference(tmp_path: Path) -> Warm:
    warm = Warm.nothing(SubprocessLauncher(), tmp_path / "work", tmp_path / "cache")
    warm.references = References()
    return warm


def test_an_honest_candidate_that_ran_out_beside_the_judge_gets_the_second_attempts_verdict(
        make_request: RequestFactory, tmp_path: Path) -> None:
    warm = _warm_keeping_a_reference(tmp_path)
    assert warm.references is not None
    kept = warm.references.reference(ADD, torch.device("cpu"), 0)
    submission = ONCE_OUT_OF_MEMORY.format(marker=str(tmp_path / "ran_out"))
    try:
        result = evaluate(make_request(ADD, submission, measure_timing=False), warm.children.launcher, warm=warm)
    finally:
        warm.close()
    assert result.verdict is Verdict.CORRECT, result.failure
    assert (tmp_path / "ran_out").exists()
    notes = [f for f in result.findings if f.code == "graded_again_after_out_of_memory"]
    assert len(notes) == 1 and "CUDA out of memory" in notes[0].message
    assert dict(result.stage_seconds)[FIRST_ATTEMPT] > 0  # the first attempt's time is counted
    assert warm.references.reference(ADD, torch.device("cpu"), 0) is not kept  # let go before the retry


def test_a_candidate_that_runs_out_every_time_is_a_runtime_error_after_one_more_attempt(
        make_request: RequestFactory, tmp_path: Path) -> None:
    result = evaluate(make_request(ADD, ALWAYS_OUT_OF_MEMORY, measure_timing=False), SubprocessLauncher())
    assert result.verdict is Verdict.RUNTIME_ERROR and result.failure is not None
    assert "OutOfMemoryError" in result.failure.message
    assert [f.code for f in result.findings].count("graded_again_after_out_of_memory") == 1
    assert FIRST_ATTEMPT in dict(result.stage_seconds)


def test_only_a_run_childs_out_of_memory_earns_another_attempt() -> None:
    def ended(verdict: Verdict, stage: Stage, message: str) -> EvalResult:
        return EvalResult(verdict, "p", "h", "fp32", Failure(stage, "exception", message))

    oom = "forward() raised an exception:\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    assert deserves_another(ended(Verdict.RUNTIME_ERROR, Stage.CORRECTNESS, oom))
    assert deserves_another(ended(Verdict.RUNTIME_ERROR, Stage.TIMING, oom))
    assert not deserves_another(ended(Verdict.RUNTIME_ERROR, Stage.CORRECTNESS, "RuntimeError: shape mismatch"))
    assert not deserves_another(ended(Verdict.INCORRECT, Stage.CORRECTNESS, oom))  # wrong values stay wrong
    assert not deserves_another(ended(Verdict.RUNTIME_ERROR, Stage.COMPILE, oom))  # a build runs no judge beside it
    assert not deserves_another(EvalResult(Verdict.CORRECT, "p", "h", "fp32"))


def test_the_evaluations_cleanup_is_a_stage_of_its_own(make_request: RequestFactory) -> None:
    result = evaluate(make_request(ADD, ADD_SUBMISSION, measure_timing=False), SubprocessLauncher())
    assert result.verdict is Verdict.CORRECT
    assert result.stage_seconds[-1][0] == "cleanup" and result.stage_seconds[-1][1] >= 0.0
    assert result.wall_s >= result.seconds - 0.01  # the cleanup counts in both
