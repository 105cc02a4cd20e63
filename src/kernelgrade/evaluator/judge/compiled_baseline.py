"""torch.compile of the reference, timed as a second baseline beside the eager reference.

The compiled reference runs in a run child, exactly where and how a candidate runs: the harness's warm-up,
timing loop, cache flush and the evaluation's own timing input sets. Only the code differs: the child
loads a generated module holding the problem's source plus a `ModelNew` that wraps `torch.compile(Model)`.
It runs in a child rather than in the judge because Dynamo's state is per process and not safe across the
judge threads of a multi-GPU host, and because inductor starts compilers and writes caches of its own.

Order: warm-up first (the first call is where inductor compiles; the profile hook of checked calls would
slow that down), then the timed reps, then one checked call whose outputs must match the eager reference
under the problem's precision policy; a compiled reference that computes something else is no baseline.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from kernelgrade.evaluator import timing
from kernelgrade.evaluator.compare import check_structure, compare_values
from kernelgrade.evaluator.host import environment
from kernelgrade.evaluator.host.reference import Reference, derive_seed, save_timing_sets
from kernelgrade.evaluator.host.removals import removals
from kernelgrade.evaluator.host.session import RunSession, StageFailed
from kernelgrade.evaluator.request import BaselinePlan, Limits, TimingParams
from kernelgrade.evaluator.result import BaselineStatus, CompiledBaseline, TimingMethod, TimingStats
from kernelgrade.evaluator.sandbox.launcher import Launcher
from kernelgrade.evaluator.wire import tensorfile

# Appended to the problem's source. `Model` is constructed after the harness seeds torch, as a candidate's
# ModelNew is, so the compiled copy holds the same weights as the judge's eager reference.
_WRAPPER = '''

import torch as _kernelgrade_torch


class ModelNew(_kernelgrade_torch.nn.Module):
    """torch.compile of the reference above (written by the grader, not a submission)."""

    def __init__(self, *args):
        super().__init__()
        self.compiled = _kernelgrade_torch.compile(Model(*args), mode={mode!r})

    def forward(self, *inputs):
        return self.compiled(*inputs)
'''


PLACEMENT = ("torch.compile of the reference in a run child, after the candidate's child has exited, same device;"
             " reused for the same problem version and device class while fresh")


def compiled_source(problem_source: str, mode: str) -> str:
    return problem_source + _WRAPPER.format(mode=mode)


def inductor_env(work_dir: Path) -> dict[str, str]:
    """Caches inside the job's work dir (the sandbox's root and /tmp are read-only), and one compile thread:
    a parallel compile starts a pool of worker processes that count against the child's process limit, and
    for a problem of a few kernels the pool's start-up costs more than it saves (a small CPU problem here:
    11.5 s with one thread, 20.5 s with the pool)."""
    # USER: a root judge's child runs as a uid no account has, and torch.compile asks getpass.getuser() for
    # its user name, which without this falls back to the password database and raises.
    return {"TORCHINDUCTOR_CACHE_DIR": str(work_dir / "inductor"), "TRITON_CACHE_DIR": str(work_dir / "triton"),
            "TORCHINDUCTOR_COMPILE_THREADS": "1", "USER": "kernelgrade-baseline"}


@dataclass(frozen=True)
class BaselineJob:
    """What measuring needs from the evaluation around it (or from a standalone run)."""

    reference: Reference
    work_dir: Path
    timing_sets: tuple[Path, ...]  # the timing input sets, as files the child loads
    init_inputs: Path
    seed: int
    params: TimingParams
    limits: Limits
    flush_bytes: int
    plan: BaselinePlan
    extra_env: tuple[tuple[str, str], ...] = ()  # the compile target's environment (CUDA arch)


def measure(job: BaselineJob, launcher: Launcher) -> CompiledBaseline:
    """Time torch.compile of the reference; a failure of torch.compile is a `failed` baseline, not an error."""
    device = job.reference.device
    module = job.work_dir / "compiled_reference.py"
    module.write_text(compiled_source(job.reference.problem.source, job.plan.mode))
    session = RunSession(launcher, job.work_dir, device.index if device.type == "cuda" else None,
                         {**dict(job.extra_env), **inductor_env(job.work_dir)})
    try:
        return _measured(job, session)
    except StageFailed as failed:
        return _failed(job, _failure_text(failed))
    except _WrongOutput as wrong:
        return _failed(job, str(wrong))
    finally:
        session.close()


class _WrongOutput(Exception):
    pass


def _measured(job: BaselineJob, session: RunSession) -> CompiledBaseline:
    device, limits = job.reference.device, job.limits
    session.load(job.work_dir / "compiled_reference.py", job.init_inputs, job.seed,
                 "cuda:0" if device.type == "cuda" else "cpu", (), limits.load_s)
    started = time.perf_counter()
    session.warmup(list(job.timing_sets), job.params, job.flush_bytes, job.plan.compile_s + limits.timing_s)
    compile_seconds = time.perf_counter() - started
    reply = session.time(job.params, limits.timing_s).reported
    _check_outputs(job, session)
    stats = timing.summarize(reply.device_ms, reply.stop_reason, reply.wall_ms, reply.host_bound_reps)
    return _baseline(job, BaselineStatus.MEASURED, stats, compile_seconds, "", reply.l2.status)


def _check_outputs(job: BaselineJob, session: RunSession) -> None:
    reference = job.reference
    inputs = reference.make_inputs(derive_seed(job.seed, "trial", 0, ""))
    expected = reference.expected(inputs)
    inputs_path, outputs_path = job.work_dir / "baseline_inputs.kgt", job.work_dir / "baseline_outputs.kgt"
    tensorfile.save(inputs_path, inputs)
    reply = session.call(inputs_path, outputs_path, [], job.limits.call_s)
    outs = tensorfile.load(outputs_path, reference.device)
    comparison = check_structure(reply.outputs, expected.refs, reference.device.type) or compare_values(
        outs, expected, reference.problem.precision)
    if not comparison.passed:
        raise _WrongOutput(f"torch.compile's output differs from the eager reference's: {comparison.message}")


def _baseline(job: BaselineJob, status: BaselineStatus, stats: TimingStats | None, compile_seconds: float,
              message: str, l2_status: str = "") -> CompiledBaseline:
    device = job.reference.device
    env = environment.describe(device, "")
    return CompiledBaseline(
        status=status, problem_hash=job.reference.problem.content_hash,
        backend=f"inductor (mode {job.plan.mode})", device_name=env.device_name, torch=env.torch,
        measured_at=datetime.now(UTC).isoformat(timespec="seconds"), timing=stats,
        method=_method(job, l2_status) if stats else None,
        compile_seconds=round(compile_seconds, 3), message=message)


def _method(job: BaselineJob, l2_status: str) -> TimingMethod:
    recorded = timing.method_record(job.params, job.flush_bytes, job.reference.device, l2_status)
    return replace(recorded, reference_placement=PLACEMENT)


def _failed(job: BaselineJob, message: str) -> CompiledBaseline:
    return _baseline(job, BaselineStatus.FAILED, None, 0.0, message)


def _failure_text(failed: StageFailed) -> str:
    """The failure and the last lines the child printed (where torch.compile's own error usually is)."""
    tail = [line for line in failed.failure.detail.strip().splitlines() if line.strip()][-6:]
    text = f"torch.compile of the reference failed: {failed.failure.message}"
    return (text + ("\n" + "\n".join(tail) if tail else ""))[:2000]


def measure_problem(reference: Reference, launcher: Launcher, work_root: Path, params: TimingParams,
                    limits: Limits, plan: BaselinePlan, seed: int,
                    extra_env: tuple[tuple[str, str], ...] = ()) -> CompiledBaseline:
    """torch.compile of a problem's reference on its own, outside an evaluation (a worker's idle time,
    benchmarks): the same timing sets and child as in evaluate()."""
    work_root.mkdir(parents=True, exist_ok=True)
    work_dir = Path(tempfile.mkdtemp(prefix="baseline-", dir=work_root))
    try:
        init_inputs = work_dir / "init_inputs.kgt"
        tensorfile.save(init_inputs, reference.init_inputs)
        _, paths = save_timing_sets(reference, work_dir, params.input_sets, seed, "")
        flush_bytes = params.flush_bytes or timing.default_flush_bytes(reference.device)
        job = BaselineJob(reference, work_dir, tuple(paths), init_inputs, seed, params, limits, flush_bytes, plan,
                          extra_env)
        return measure(job, launcher)
    finally:
        removals().remove(work_dir)  # its timing sets: gigabytes for the largest problems, removed off the judge's time


def speedup_against(baseline: CompiledBaseline | None, candidate: TimingStats | None) -> float | None:
    if baseline is None or baseline.timing is None or candidate is None or candidate.median_ms <= 0:
        return None
    return baseline.timing.median_ms / candidate.median_ms
