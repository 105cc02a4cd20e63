"""Turning a stored job into an EvalRequest: the problem's spec, the settings' protocol profile, the judge's
device. Imported only by the worker pool (it imports the evaluator, and so torch)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from kernelgrade.config import Settings
from kernelgrade.evaluator import (
    BaselinePlan,
    CompiledBaseline,
    DeviceKind,
    EvalRequest,
    Interleave,
    Limits,
    ProblemSpec,
    TimingParams,
    TrialPlan,
)
from kernelgrade.storage.records import ProblemRecord

# The "fast" profile: few trials and a short timing loop, enough to exercise every stage and give a
# speedup on a 2-core CI machine in seconds; results record these parameters beside the numbers.
FAST_TIMING = TimingParams(warmup_calls=3, warmup_ms=5.0, min_reps=10, max_reps=200, max_device_ms=300.0,
                           max_wall_ms=1500.0, input_sets=2, reference_check_reps=5)
FAST_TRIALS = TrialPlan(public_trials=3, secret_trials=2)
# A hung call must be noticed within seconds in tests; a C++ build on 2 cores takes about 35 s, so 240 s
# leaves room for a loaded machine.
FAST_LIMITS = Limits(compile_s=240.0, load_s=60.0, call_s=10.0, timing_s=60.0)


@dataclass(frozen=True)
class RequestBuilder:
    settings: Settings
    # The cores its requests' builds run on (worker/cores.py); empty: wherever the judge runs.
    build_cpus: tuple[int, ...] = ()

    def build(self, problem: ProblemSpec, source: str, device_index: int,
              known_baseline: CompiledBaseline | None = None) -> EvalRequest:
        """`known_baseline`: a fresh torch.compile measurement of this problem version on this device class,
        reported beside the verdict. None is measured on the verdict's path (worker/compiled_baselines.py)."""
        settings = self.settings
        fast = settings.timing_profile == "fast"
        trials = replace(FAST_TRIALS if fast else TrialPlan(), secret=settings.seed_secret)
        return EvalRequest(problem=problem, submission=source, cache_dir=settings.cache_dir,
                           work_root=settings.work_root, device_index=device_index, trials=trials,
                           timing=self._timing(), limits=FAST_LIMITS if fast else Limits(),
                           max_source_bytes=settings.max_source_bytes, compile_jobs=settings.compile_jobs,
                           precompiled_header=settings.precompiled_headers,
                           lean_cuda_header=settings.lean_cuda_header,
                           compiled_baseline=BaselinePlan(
                               measure=False, known=known_baseline,
                               later=settings.measures_compiled_baseline and known_baseline is None),
                           build_cpus=self.build_cpus)

    def _timing(self) -> TimingParams:
        timing = replace(FAST_TIMING if self.settings.timing_profile == "fast" else TimingParams(),
                         interleave=Interleave(self.settings.interleaved_timing))
        return timing if self.settings.stored_reference_timing else replace(timing, reference_check_reps=0)


def problem_spec(problem: ProblemRecord) -> ProblemSpec:
    """The judge's view of a stored problem version, read from its source as the loader reads any file."""
    from kernelgrade.problems import load_problem_source

    spec = load_problem_source(problem.source, problem.name, problem.suite, problem.level).spec()
    if spec.content_hash != problem.content_hash:
        raise ValueError(f"problem {problem.name}: stored hash {problem.content_hash[:12]} does not match its source")
    return replace(spec, device=DeviceKind(problem.device_kind))
