"""torch.compile of the reference as a second baseline: measured for real (inductor on the CPU, in the real
sandbox where this machine has one), reused when the request brings a fresh one, and a failed compile or a
compiled reference that computes something else reported as a failed baseline, never as the verdict."""

from __future__ import annotations

import dataclasses

import pytest

from kernelgrade.evaluator import (
    BaselinePlan,
    BaselineStatus,
    CompiledBaseline,
    DeviceKind,
    EvalResult,
    ProblemSpec,
    TimingStats,
    Verdict,
    evaluate,
    measure_baseline,
)
from kernelgrade.evaluator.judge.compiled_baseline import PLACEMENT, compiled_source
from kernelgrade.evaluator.sandbox.launcher import Launcher, SubprocessLauncher
from kernelgrade.evaluator.sandbox.levels import SandboxUnavailable, make_launcher
from kernelgrade.problems import find_builtin, load_problem_source
from tests.conftest import RequestFactory
from tests.evaluator.test_integrity_engine import TORCH_SUBMISSION

# Under torch.compile, Dynamo traces forward() with is_compiling() true: the compiled model takes a branch the
# eager one never does.
COMPILES_DIFFERENTLY = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        if torch.compiler.is_compiling():
            return torch.relu(a + b) * 2
        return torch.relu(a + b)


def get_inputs():
    return [torch.randn(256, 256), torch.randn(256, 256)]


def get_init_inputs():
    return []
'''

# Only the traced branch is invalid, so the eager reference works and torch.compile fails while tracing.
FAILS_TO_COMPILE = COMPILES_DIFFERENTLY.replace("return torch.relu(a + b) * 2", "return (a + b).view(-1, 7)")


def add_relu() -> ProblemSpec:
    problem = find_builtin("add_relu")
    assert problem is not None
    return problem.spec()


def sandboxed() -> Launcher:
    try:
        return make_launcher("bwrap")
    except SandboxUnavailable:
        return SubprocessLauncher()


def test_measured_in_the_sandbox_and_reported_beside_the_eager_speedup(make_request: RequestFactory) -> None:
    request = make_request(add_relu(), TORCH_SUBMISSION, compiled_baseline=BaselinePlan(measure=True))
    result = evaluate(request, sandboxed())
    assert result.verdict is Verdict.CORRECT, result.failure
    baseline = result.compiled_baseline
    assert baseline is not None and baseline.status is BaselineStatus.MEASURED, baseline
    assert baseline.timing is not None and baseline.timing.median_ms > 0 and baseline.timing.n >= 10
    assert baseline.problem_hash == request.problem.content_hash and baseline.backend == "inductor (mode default)"
    assert baseline.compile_seconds > 0 and baseline.method is not None
    assert baseline.method.reference_placement == PLACEMENT and baseline.torch
    assert not result.compiled_baseline_reused
    assert result.candidate_timing is not None and result.speedup_vs_compiled is not None
    assert result.speedup_vs_compiled == pytest.approx(baseline.timing.median_ms / result.candidate_timing.median_ms)
    assert "compiled_baseline" in dict(result.stage_seconds)
    again = EvalResult.from_json_dict(result.to_json_dict())
    assert again.compiled_baseline == baseline and again.speedup_vs_compiled == result.speedup_vs_compiled


def known_baseline(problem_hash: str, median_ms: float) -> CompiledBaseline:
    stats = TimingStats(n=20, median_ms=median_ms, mean_ms=median_ms, std_ms=0.0, min_ms=median_ms,
                        max_ms=median_ms, ci95_low_ms=median_ms, ci95_high_ms=median_ms, stop_reason="target_rse")
    return CompiledBaseline(status=BaselineStatus.MEASURED, problem_hash=problem_hash,
                            backend="inductor (mode default)", device_name="cpu", torch="x",
                            measured_at="2026-11-20T00:00:00+00:00", timing=stats)


def test_a_known_baseline_is_reused_and_one_of_another_version_is_not(make_request: RequestFactory) -> None:
    problem = add_relu()
    known = known_baseline(problem.content_hash, 7.0)
    reused = evaluate(make_request(problem, TORCH_SUBMISSION, compiled_baseline=BaselinePlan(known=known)),
                      SubprocessLauncher())
    assert reused.compiled_baseline == known and reused.compiled_baseline_reused
    assert reused.candidate_timing is not None
    assert reused.speedup_vs_compiled == pytest.approx(7.0 / reused.candidate_timing.median_ms)
    assert "compiled_baseline" not in dict(reused.stage_seconds)
    stale = dataclasses.replace(known, problem_hash="0" * 64)
    ignored = evaluate(make_request(problem, TORCH_SUBMISSION, compiled_baseline=BaselinePlan(known=stale)),
                       SubprocessLauncher())
    assert ignored.compiled_baseline is None and ignored.speedup_vs_compiled is None
    assert not ignored.compiled_baseline_pending


def test_one_measured_later_is_pending_and_measure_baseline_measures_it_alone(make_request: RequestFactory) -> None:
    """The worker's way: the verdict without it (pending), then the baseline on its own, as it is timed in an
    evaluation."""
    request = make_request(add_relu(), TORCH_SUBMISSION, compiled_baseline=BaselinePlan(later=True))
    graded = evaluate(request, SubprocessLauncher())
    assert graded.verdict is Verdict.CORRECT and graded.compiled_baseline_pending
    assert graded.compiled_baseline is None and "compiled_baseline" not in dict(graded.stage_seconds)
    baseline = measure_baseline(request, sandboxed())
    assert baseline.status is BaselineStatus.MEASURED, baseline
    assert baseline.timing is not None and baseline.timing.median_ms > 0
    assert baseline.problem_hash == request.problem.content_hash and baseline.method is not None
    assert not any(request.work_root.iterdir())  # its work dir is gone


def test_not_measured_for_a_candidate_that_never_reached_timing(make_request: RequestFactory) -> None:
    wrong = TORCH_SUBMISSION.replace("torch.relu(a + b)", "torch.relu(a - b)")
    result = evaluate(make_request(add_relu(), wrong, compiled_baseline=BaselinePlan(measure=True)),
                      SubprocessLauncher())
    assert result.verdict is Verdict.INCORRECT
    assert result.compiled_baseline is None and result.speedup_vs_compiled is None


def problem_from(source: str, name: str) -> ProblemSpec:
    return dataclasses.replace(load_problem_source(source, name).spec(), device=DeviceKind.CPU)


@pytest.mark.parametrize(("source", "expected"), [
    pytest.param(COMPILES_DIFFERENTLY, "differs from the eager reference", id="wrong-output"),
    pytest.param(FAILS_TO_COMPILE, "torch.compile of the reference failed", id="compile-fails"),
])
def test_a_bad_compiled_reference_is_a_failed_baseline_not_a_verdict(
        source: str, expected: str, make_request: RequestFactory) -> None:
    problem = problem_from(source, "compiled_differs")
    result = evaluate(make_request(problem, TORCH_SUBMISSION, compiled_baseline=BaselinePlan(measure=True)),
                      SubprocessLauncher())
    assert result.verdict is Verdict.CORRECT, result.failure
    baseline = result.compiled_baseline
    assert baseline is not None and baseline.status is BaselineStatus.FAILED
    assert expected in baseline.message and baseline.timing is None
    assert result.speedup_vs_compiled is None and result.speedup is not None


def test_the_generated_module_wraps_the_reference_without_changing_it() -> None:
    source = add_relu().source
    wrapped = compiled_source(source, "max-autotune")
    assert wrapped.startswith(source)
    assert "compile(Model(*args), mode='max-autotune')" in wrapped


SMALL_GPU_PROBLEM = '''
import torch
import torch.nn as nn

KERNELGRADE = {"device": "cuda", "flops": 2 * 4096 * 4096, "bytes": 2 * 4 * 4096 * 4096}


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2


def get_inputs():
    return [torch.randn(4096, 4096)]


def get_init_inputs():
    return []
'''

TORCH_RELU_TWICE = '''
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2
'''


@pytest.mark.gpu
def test_triton_compiles_the_reference_inside_the_sandbox_on_a_gpu(make_request: RequestFactory) -> None:
    """Inductor on a GPU writes Triton kernels and builds their launchers in the child: under bwrap that needs
    the cache directories the baseline points into the work dir, and a user name for a uid no account has."""
    problem = load_problem_source(SMALL_GPU_PROBLEM, "small_gpu_relu").spec()
    result = evaluate(make_request(problem, TORCH_RELU_TWICE, compiled_baseline=BaselinePlan(measure=True)),
                      sandboxed())
    assert result.verdict is Verdict.CORRECT, result.failure
    baseline = result.compiled_baseline
    assert baseline is not None and baseline.status is BaselineStatus.MEASURED, baseline
    assert baseline.median_ms is not None and baseline.median_ms > 0 and result.speedup_vs_compiled is not None
    assert "H100" in baseline.device_name or "NVIDIA" in baseline.device_name
