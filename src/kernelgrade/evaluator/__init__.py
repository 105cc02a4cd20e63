"""The grading engine: request in, result out. Imports only the standard library and torch.

    from kernelgrade.evaluator import evaluate, EvalRequest, ProblemSpec
    result = evaluate(EvalRequest(problem=..., submission=source, cache_dir=..., work_root=...))

request.py and result.py are what the judge is asked and what it answers; timing.py (with stream_hold.py,
which holds a timed rep's stream until the rep is enqueued), compare.py and source_module.py are the timing
loop, the output comparison and the loading of source files that judge and child both run; codec.py turns the
evaluator's dataclasses into JSON and back, for the children's messages and the stored results. The rooms:
judge/ (one evaluation: the pipeline and its stages), host/ (what a judge keeps beyond one evaluation),
child/ (what runs inside the box), wire/ (what crosses between judge and child), integrity/ (the checks on
the child's claims) and sandbox/ (how a child is started and contained).
"""

from kernelgrade.evaluator.host.warm import Warm
from kernelgrade.evaluator.judge.compile import CompileOutcome
from kernelgrade.evaluator.judge.pipeline import evaluate, measure_baseline, precompile
from kernelgrade.evaluator.judge.prepare import Preparation, prepare
from kernelgrade.evaluator.judge.progress import Progress, ProgressFn
from kernelgrade.evaluator.request import (
    BaselinePlan,
    DeviceKind,
    EvalRequest,
    Interleave,
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
    "EvalRequest", "EvalResult", "Failure", "Finding", "Interleave", "Launcher", "Limits", "PrecisionKind",
    "PrecisionPolicy", "Preparation", "ProblemSpec", "Progress", "ProgressFn", "Severity", "Stage",
    "SubprocessLauncher", "TimingFlags", "TimingMethod", "TimingParams", "TimingStats", "TrialPlan", "TrialResult",
    "Verdict", "Warm", "evaluate", "measure_baseline", "precompile", "prepare",
]
