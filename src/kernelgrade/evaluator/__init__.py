"""The grading engine: request in, result out. Imports only the standard library and torch.

    from kernelgrade.evaluator import evaluate, EvalRequest, ProblemSpec
    result = evaluate(EvalRequest(problem=..., submission=source, cache_dir=..., work_root=...))

request.py and result.py are what the judge is asked and what it answers; timing.py and compare.py are the
timing loop and output comparison that judge and child both run. The rooms: judge/ (the pipeline and its
stages), child/ (what runs inside the box), integrity/ (the checks on the child's claims) and sandbox/
(how a child is started and contained).
"""

from kernelgrade.evaluator.judge.compile import CompileOutcome
from kernelgrade.evaluator.judge.pipeline import evaluate, precompile
from kernelgrade.evaluator.judge.progress import Progress, ProgressFn
from kernelgrade.evaluator.judge.warm import Warm
from kernelgrade.evaluator.request import (
    BaselinePlan,
    DeviceKind,
    EvalRequest,
    Limits,
    PrecisionKind,
    PrecisionPolicy,
    ProblemSpec,
    TimingFlags,
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
    "ProblemSpec", "Progress", "ProgressFn", "Severity", "Stage", "SubprocessLauncher", "TimingFlags", "TimingMethod",
    "TimingParams", "TimingStats", "TrialPlan", "TrialResult", "Verdict", "Warm", "evaluate", "precompile",
]
