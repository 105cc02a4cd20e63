"""evaluate(): one submission in, one EvalResult out, through the stages in the order they run:

    validate -> compile -> load -> correctness -> timing -> (compiled baseline) -> result

The judge (this process) owns seeds, reference outputs and reference timings; the children own
everything the submission touches. A failing kernel becomes a verdict (outcome.py); only the grader's own
faults become `error`.
"""

from __future__ import annotations

import dataclasses
import gc
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch

from kernelgrade.evaluator.device_cache import leave_room, release_pinned
from kernelgrade.evaluator.host import environment
from kernelgrade.evaluator.host.host_lock import HostLock
from kernelgrade.evaluator.host.reference import Reference
from kernelgrade.evaluator.host.run_children import ChildKind
from kernelgrade.evaluator.host.session import RunSession, StageFailed
from kernelgrade.evaluator.host.warm import Warm
from kernelgrade.evaluator.integrity.crosscheck import extension_findings, process_findings
from kernelgrade.evaluator.integrity.proctree import TreeCount, count_tree
from kernelgrade.evaluator.integrity.static_scan import scan_submission
from kernelgrade.evaluator.judge import compiled_baseline, second_attempt
from kernelgrade.evaluator.judge.compile import BuildTarget, CompileOutcome, arch_env, compile_submission
from kernelgrade.evaluator.judge.compiled_baseline import BaselineJob
from kernelgrade.evaluator.judge.correctness import check_correctness, trial_inputs
from kernelgrade.evaluator.judge.job import Job, SubmissionFiles, judge_device, on_device
from kernelgrade.evaluator.judge.load import load_model
from kernelgrade.evaluator.judge.outcome import (
    Verdicted,
    build_result,
    completed,
    ended_early,
    grader_error,
    reset_peak_memory,
    with_cleanup,
)
from kernelgrade.evaluator.judge.progress import ProgressFn
from kernelgrade.evaluator.judge.record import Record
from kernelgrade.evaluator.judge.reference_ahead import ReferenceAhead
from kernelgrade.evaluator.judge.reference_child import expect_child
from kernelgrade.evaluator.judge.timing_stage import TimingInputs, TimingSets, time_candidate
from kernelgrade.evaluator.judge.validate import validate_submission
from kernelgrade.evaluator.request import EvalRequest
from kernelgrade.evaluator.result import CompiledBaseline, EvalResult, Failure, Stage, Verdict
from kernelgrade.evaluator.sandbox.launcher import Launcher, SubprocessLauncher
from kernelgrade.evaluator.source_module import load_problem_module
from kernelgrade.evaluator.wire.prebuilt import Prebuilt


def evaluate(request: EvalRequest, launcher: Launcher | None = None, progress: ProgressFn | None = None,
             warm: Warm | None = None) -> EvalResult:
    """Grade one submission. Never raises for anything the submission does. `warm`: what a long-lived judge
    keeps between evaluations (run children started ahead, references); by default nothing is kept. A
    candidate whose run child ran out of device memory is graded a second time, with nothing kept
    (second_attempt.py)."""
    launcher = launcher or SubprocessLauncher()
    own = warm is None
    warm = warm or Warm.nothing(launcher, request.work_root, request.cache_dir)
    try:
        first = _attempt(request, launcher, progress, warm)
        if not second_attempt.deserves_another(first):
            return first
        _let_go_of_kept(warm, judge_device(request))
        return second_attempt.after_retry(_attempt(request, launcher, progress, warm), first)
    finally:
        if own:
            warm.close()


def _attempt(request: EvalRequest, launcher: Launcher, progress: ProgressFn | None, warm: Warm) -> EvalResult:
    job = Job.start(request, launcher, progress or (lambda _p: None), warm)
    record = Record()
    ran_out = False
    try:
        with on_device(job.device):
            reset_peak_memory(job.device)
            result = _grade(job, record)
    except torch.cuda.OutOfMemoryError:
        ran_out = True  # the grader's own: the child's out-of-memory is its verdict, not an exception here
        result = grader_error(job, record)
    except Exception:
        result = grader_error(job, record)
    finally:
        started = time.perf_counter()
        job.cleanup()
        if ran_out:
            _let_go_of_kept(warm, job.device)  # leaves room too
        else:
            leave_room(job.device)  # for the next evaluation's child, and any other process on the device
        release_pinned()
    return with_cleanup(result, time.perf_counter() - started)


def _let_go_of_kept(warm: Warm, device: torch.device) -> None:
    """What the judge keeps on `device` may be what left too little room: the retry starts without it. The
    failed evaluation's frames can hold device tensors in reference cycles; collecting them frees those too."""
    if warm.references is not None:
        warm.references.let_go_on(device)
    warm.children.let_go_of_kept()
    gc.collect()
    leave_room(device)


def _grade(job: Job, record: Record) -> EvalResult:
    rejected = _validate(job)
    if rejected:
        return build_result(job, record, Verdict.REJECTED, rejected)
    problem = job.request.problem
    record.note(scan_submission(job.request.submission, problem.source, problem.torch_ops))
    try:
        _run_stages(job, record)
    except Verdicted as ended:
        return ended_early(job, record, ended.failure)
    return completed(job, record)


def _validate(job: Job) -> Failure | None:
    request = job.request
    with job.in_stage(Stage.VALIDATE, "checking the source"):
        return validate_submission(request.submission, request.problem.source, request.max_source_bytes)


def _run_stages(job: Job, record: Record) -> None:
    """The device is used under the judge's shared hold of its lock (run_children.py), from the candidate's
    child on, and for the reference before; not for the build between, which can take minutes and never
    touches the device: another judge of the device may measure meanwhile."""
    with job.timed("reference"), job.using_device():
        reference = job.reference()
    files = SubmissionFiles.write(job.work_dir, job.request.submission, reference.init_inputs)
    target = build_target(job.request)
    compiled = _compile(job, record, files, target)
    with job.using_device():
        _on_device(job, record, reference, compiled, target)


def _on_device(job: Job, record: Record, reference: Reference, compiled: CompileOutcome,
               target: BuildTarget) -> None:
    env = arch_env(target)
    kind = child_kind(job.request)
    session = _run_child(job, kind)
    if job.request.measure_timing:  # the reference's own child, starting while the candidate loads and is checked
        expect_child(job.warm.children, reference, job.request.trials.seed, kind)
    session.stage_extensions(compiled.extensions_dir, compiled.prebuilt)
    job.adopt(session.work_dir)
    files = SubmissionFiles.write(job.work_dir, job.request.submission, reference.init_inputs)
    timed = _in_run_child(job, record, session, reference, files, compiled.prebuilt, kind)
    _compiled_baseline(job, record, reference, files.init_inputs, timed, env)


def _run_child(job: Job, kind: ChildKind) -> RunSession:
    """A warm child where the judge keeps them; else one started now. One that cannot even start is the
    grader's fault (a broken sandbox or torch), not the submission's."""
    job.report(Stage.LOAD, "starting the run child")
    try:
        with job.timed("child_start"):
            return job.warm.children.take(kind)
    except StageFailed as failed:
        raise RuntimeError(f"the run child did not start: {failed.failure.message}") from None


def _compile(job: Job, record: Record, files: SubmissionFiles, target: BuildTarget) -> CompileOutcome:
    request = job.request
    with job.in_stage(Stage.COMPILE, "compiling"):
        record.compiled = compile_submission(request.submission, files.submission, files.init_inputs,
                                             request.trials.seed, target, request.cache_dir, job.work_dir,
                                             job.launcher, job.warm.children.host_lock)
    if record.compiled.failure:
        raise Verdicted(record.compiled.failure)
    return record.compiled


def _in_run_child(job: Job, record: Record, session: RunSession, reference: Reference,
                  files: SubmissionFiles, prebuilt: tuple[Prebuilt, ...], kind: ChildKind) -> TimingSets | None:
    """Load, correctness and timing share one run child. However it ends, its output is kept, and the
    judge's own device must still work afterwards."""
    try:
        return _child_stages(job, record, session, reference, files, prebuilt, kind)
    except StageFailed as failed:
        raise Verdicted(failed.failure) from None
    finally:
        with job.timed("child_end"):
            job.warm.children.used_region(kind, session.region.reserved)
            record.region = session.region.describe()
            session.close()
            record.child_output = session.output()
            job.check_device()


def _child_stages(job: Job, record: Record, session: RunSession, reference: Reference,
                  files: SubmissionFiles, prebuilt: tuple[Prebuilt, ...], kind: ChildKind) -> TimingSets | None:
    """`kind`: the candidate's child's, which the reference's own child for timing shares."""
    if not job.request.measure_timing:
        _checked(job, record, session, reference, files, prebuilt)
        return None
    inputs = TimingInputs(job, reference)
    # Sets read ahead are kept by the child's warm-ups on a GPU only (run_child.Harness.keeps_sets).
    sets_ahead = inputs.files_once_written if job.device.type == "cuda" else None
    ahead = ReferenceAhead(job.warm.children, kind, reference, job.request.trials.seed, job.request.limits,
                           sets_ahead)
    try:
        baseline = _checked(job, record, session, reference, files, prebuilt, ahead.start)
        timed = time_candidate(job, record, session, reference, inputs, kind, ahead)
        record.note(process_findings(baseline, count_tree(session.child.proc.pid), "by the end of timing"))
        return timed
    finally:
        inputs.close()
        ahead.close()


def _checked(job: Job, record: Record, session: RunSession, reference: Reference, files: SubmissionFiles,
             prebuilt: tuple[Prebuilt, ...], first_passed: Callable[[], None] = lambda: None) -> TreeCount | None:
    """The candidate loaded and checked; what its process tree was once loaded."""
    with trial_inputs(job, reference, session) as trials:
        baseline = load_model(job, record, session, files, prebuilt)
        integrity = check_correctness(job, record, session, trials, first_passed)
    if integrity is not None:
        record.note(extension_findings(integrity.extensions, "torch.ops." in job.request.submission))
    record.note(process_findings(baseline, count_tree(session.child.proc.pid), "during the checked calls"))
    return baseline


def _compiled_baseline(job: Job, record: Record, reference: Reference, init_inputs: Path,
                       timed: TimingSets | None, env: dict[str, str]) -> None:
    """torch.compile of the reference: a fresh earlier measurement if the request brings one, else
    measured now (after the candidate's child is gone, so the two never share the device)."""
    plan, problem = job.request.compiled_baseline, job.request.problem
    if timed is None or record.candidate_timing is None:
        return
    if plan.known is not None and plan.known.problem_hash == problem.content_hash:
        record.compiled_baseline, record.compiled_baseline_reused = plan.known, True
        return
    if not plan.measure:
        record.compiled_baseline_pending = plan.later
        return
    job.report(Stage.TIMING, "timing torch.compile of the reference")
    measured = BaselineJob(reference, job.work_dir, timed.paths, init_inputs, job.request.trials.seed,
                           job.timing_params, job.request.limits, timed.flush_bytes, plan, tuple(env.items()))
    with job.timed("compiled_baseline"), job.warm.children.quiet(cpu=job.device.type == "cpu"):
        record.compiled_baseline = compiled_baseline.measure(measured, job.launcher)
    job.check_device()


def measure_baseline(request: EvalRequest, launcher: Launcher | None = None, warm: Warm | None = None
                     ) -> CompiledBaseline:
    """torch.compile of the request's problem timed on its own, as evaluate() times it beside a candidate (the
    request's device, protocol and limits; its submission is not read): what a worker measures off the
    verdict's path, when the judge would otherwise idle. What torch.compile does wrong is a `failed` baseline."""
    launcher = launcher or SubprocessLauncher()
    own = warm is None
    warm = warm or Warm.nothing(launcher, request.work_root, request.cache_dir)
    job = Job.start(request, launcher, lambda _p: None, warm)
    plan = dataclasses.replace(request.compiled_baseline, measure=True)
    env = tuple(arch_env(build_target(request)).items())
    try:
        with on_device(job.device), warm.children.quiet(cpu=job.device.type == "cpu"):
            return compiled_baseline.measure_problem(job.reference(), launcher, job.work_dir, job.timing_params,
                                                     request.limits, plan, request.trials.seed, env)
    finally:
        job.cleanup()
        leave_room(job.device)  # for the next evaluation's child, and any other process on the device
        release_pinned()
        if own:
            warm.close()


def precompile(request: EvalRequest, launcher: Launcher | None = None, host_lock: Path | None = None) -> CompileOutcome:
    """Run only the compile stage, filling the cache, so that a later evaluate() of the same source skips
    it. Lets a worker pool compile queued jobs while the device grades others. No GPU is needed. `host_lock`:
    the file of the lock the host's judges hold around CPU measurements (host_lock.py); the build waits for
    one, and holds off the next until it is done."""
    request.work_root.mkdir(parents=True, exist_ok=True)
    work_dir = Path(tempfile.mkdtemp(prefix="compile-", dir=request.work_root))
    try:
        module = load_problem_module(request.problem.source, request.problem.name)
        files = SubmissionFiles.write(work_dir, request.submission, list(module.get_init_inputs()))
        return compile_submission(request.submission, files.submission, files.init_inputs, request.trials.seed,
                                  build_target(request), request.cache_dir, work_dir, launcher or SubprocessLauncher(),
                                  HostLock(host_lock) if host_lock is not None else None)
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)


def child_kind(request: EvalRequest) -> ChildKind:
    """The run child a request's candidate gets, and its reference's own child for timing too: the judge's GPU
    (seen as the child's only one) or the CPU, and the environment its builds are made for."""
    device = judge_device(request)
    env = tuple(sorted(arch_env(build_target(request)).items()))
    return ChildKind(device.index, "cuda:0", env) if device.type == "cuda" else ChildKind(None, "cpu", env)


def build_target(request: EvalRequest) -> BuildTarget:
    device = request.problem.device.value
    arch = environment.cuda_arch(torch.device("cuda", request.device_index)) if device == "cuda" else ""
    # CUDA builds keep torch's own flags: on an H100 host they built and graded the same with the header, but
    # no faster (one build 76 s with it, 73 s without; nvcc's cuda.cu, not main.cpp, is the critical path), and
    # the header costs a 90 s build and 0.8 GB per variant.
    pch = request.precompiled_header and device == "cpu"
    return BuildTarget(device, arch, request.compile_jobs, request.limits.compile_s, pch, request.lean_cuda_header,
                       request.build_cpus)
