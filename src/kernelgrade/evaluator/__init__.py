"""The grading engine: request in, result out. Imports only the standard library and torch.

    from kernelgrade.evaluator import evaluate, EvalRequest, ProblemSpec
    result = evaluate(EvalRequest(problem=..., submission=source, cache_dir=..., work_root=...))
"""

from kernelgrade.evaluator.judge.compile import CompileOutcome
from kernelgrade.evaluator.judge.pipeline import evaluate, precompile
from kernelgrade.evaluator.judge.progress import Progress, ProgressFn
from kernelgrade.evaluator.request import (
    BaselinePlan,
    DeviceKind,
    EvalRequest,
    Limits,
    PrecisionKind,
    PrecisionPolicy,
    ProblemSpec,
    TimingParams,
    TrialPlan,
)
from kernelgrade.evaluator.result import (
    BaselineStatus,
    CompiledBaseline,
    Environment,
    EvalResult,
    Failure,
    Finding,
    Severity,
    Stage,
    TimingMethod,
    TimingStats,
    TrialResult,
    Verdict,
)
from kernelgrade.evaluator.sandbox.launcher import ChildSpec, Launcher, SubprocessLauncher

__all__ = [
    "BaselinePlan", "BaselineStatus", "ChildSpec", "CompileOutcome", "CompiledBaseline", "DeviceKind", "Environment",
    "EvalRequest", "EvalResult", "Failure", "Finding", "Launcher", "Limits", "PrecisionKind", "PrecisionPolicy",
    "ProblemSpec", "Progress", "ProgressFn", "Severity", "Stage", "SubprocessLauncher", "TimingMethod",
    "TimingParams", "TimingStats", "TrialPlan", "TrialResult", "Verdict", "evaluate", "precompile",
]
