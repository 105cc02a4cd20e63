"""evaluate(): one submission in, one EvalResult out. Stages: validate, compile, load, correctness, timing.

The judge (this process) owns seeds, reference outputs and reference timings; the children own
everything the submission touches. A failing kernel becomes a verdict; only the grader's own faults
become `error`.
"""

from __future__ import annotations

import secrets
import shutil
import statistics
import tempfile
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from kernelgrade.evaluator import timing
from kernelgrade.evaluator.child import tensorfile
from kernelgrade.evaluator.child.replies import CallReply, Integrity, TimedReply
from kernelgrade.evaluator.compare import check_structure, compare_values
from kernelgrade.evaluator.integrity import precision_flags
from kernelgrade.evaluator.integrity.crosscheck import (
    ReferenceLoop,
    extension_findings,
    integrity_findings,
    process_findings,
    roofline_findings,
    speedup_findings,
    timing_findings,
)
from kernelgrade.evaluator.integrity.l2 import PersistingL2
from kernelgrade.evaluator.integrity.proctree import TreeCount, count_tree
from kernelgrade.evaluator.integrity.roofline import floor_for
from kernelgrade.evaluator.integrity.static_scan import scan_submission
from kernelgrade.evaluator.integrity.tensor_checks import fingerprints
from kernelgrade.evaluator.judge import compiled_baseline, environment
from kernelgrade.evaluator.judge.compile import BuildTarget, CompileOutcome, arch_env, compile_submission
from kernelgrade.evaluator.judge.compiled_baseline import BaselineJob
from kernelgrade.evaluator.judge.reference import Reference, derive_seed, save_timing_sets, to_device
from kernelgrade.evaluator.judge.session import RunSession, StageFailed
from kernelgrade.evaluator.request import EvalRequest, TimingParams
from kernelgrade.evaluator.result import (
    CompiledBaseline,
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
from kernelgrade.evaluator.roofline_floor import RooflineFloor
from kernelgrade.evaluator.sandbox.launcher import Launcher, SubprocessLauncher

# The finding a stalled host can produce once; it is confirmed by a second timed phase before it stands.
INCONSISTENT = "timing_inconsistent"
# The child re-fingerprints each output after a device-wide synchronize and a settle of this many times the
# reference's own time: work finishing an output late takes about as long as computing it, so twice that
# lets it show. The bounds are the child's (run_child.MIN_SETTLE_S, MAX_SETTLE_S), repeated so the judge
# states what it asks for.
SETTLE_FACTOR = 2.0
MIN_SETTLE_S = 0.002
MAX_SETTLE_S = 1.0


@dataclass(frozen=True)
class Progress:
    stage: Stage
    message: str
    done: int = 0
    total: int = 0


ProgressFn = Callable[[Progress], None]


class _Verdicted(Exception):
    """Ends the evaluation early with a failure; the verdict follows from its stage and code."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.message)
        self.failure = failure


def precompile(request: EvalRequest, launcher: Launcher | None = None) -> CompileOutcome:
    """Run only the compile stage, filling the cache, so that a later evaluate() of the same source skips
    it. Lets a worker pool compile queued jobs while the device grades others. No GPU is needed."""
    from kernelgrade.evaluator.child.submission_module import load_problem_module

    request.work_root.mkdir(parents=True, exist_ok=True)
    work_dir = Path(tempfile.mkdtemp(prefix="compile-", dir=request.work_root))
    try:
        module = load_problem_module(request.problem.source, request.problem.name)
        submission = work_dir / "submission.py"
        submission.write_text(request.submission)
        init_inputs = work_dir / "init_inputs.kgt"
        tensorfile.save(init_inputs, list(module.get_init_inputs()))
        return compile_submission(request.submission, submission, init_inputs, request.trials.seed,
                                  build_target(request), request.cache_dir, work_dir, launcher or SubprocessLauncher())
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)


def build_target(request: EvalRequest) -> BuildTarget:
    device = request.problem.device.value
    arch = environment.cuda_arch(torch.device("cuda", request.device_index)) if device == "cuda" else ""
    return BuildTarget(device, arch, request.compile_jobs, request.limits.compile_s)


def evaluate(request: EvalRequest, launcher: Launcher | None = None,
             progress: ProgressFn | None = None) -> EvalResult:
    """Grade one submission. Never raises for anything the submission does."""
    run = _Evaluation(request, launcher or SubprocessLauncher(), progress or (lambda _p: None))
    try:
        return run.execute()
    except Exception:
        failure = Failure(Stage(run.stage), "grader_error",
                          "the grader itself failed; this is not the submission's fault. It will be retried.",
                          detail=traceback.format_exc(limit=20))
        return run.result(Verdict.ERROR, failure)
    finally:
        run.cleanup()


class _Evaluation:
    def __init__(self, request: EvalRequest, launcher: Launcher, progress: ProgressFn) -> None:
        self.request = request
        self.launcher = launcher
        self.progress = progress
        self.stage = Stage.VALIDATE
        cuda = request.problem.device.value == "cuda"
        self.device = torch.device(f"cuda:{request.device_index}") if cuda else torch.device("cpu")
        self.stage_seconds: list[tuple[str, float]] = []
        self.trials: list[TrialResult] = []
        self.findings: list[Finding] = []
        self.reference_timing: TimingStats | None = None
        self.candidate_timing: TimingStats | None = None
        self.method: TimingMethod | None = None
        self.compiled: CompileOutcome | None = None
        self.child_output = ""
        self.roofline: RooflineFloor | None = None
        self.baseline: TreeCount | None = None
        self.last_integrity: Integrity | None = None
        self.timing_paths: list[Path] = []
        self.flush_bytes = 0
        self.compiled_baseline: CompiledBaseline | None = None
        self.compiled_baseline_reused = False
        # Secret trials and timing inputs must be unpredictable even where the deployment set no secret.
        self.secret = request.trials.secret or secrets.token_hex(16)
        request.work_root.mkdir(parents=True, exist_ok=True)
        self.work_dir = Path(tempfile.mkdtemp(prefix="job-", dir=request.work_root))

    def cleanup(self) -> None:
        shutil.rmtree(self.work_dir, ignore_errors=True)

    @contextmanager
    def _stage(self, stage: Stage, message: str) -> Iterator[None]:
        self.stage = stage
        self.progress(Progress(stage, message))
        started = time.monotonic()
        try:
            yield
        finally:
            self.stage_seconds.append((stage.value, round(time.monotonic() - started, 4)))

    def execute(self) -> EvalResult:
        from kernelgrade.evaluator.judge.validate import validate_submission

        precision_flags.set_strict()
        request = self.request
        with self._stage(Stage.VALIDATE, "checking the source"):
            rejected = validate_submission(request.submission, request.problem.source, request.max_source_bytes)
        if rejected:
            return self.result(Verdict.REJECTED, rejected)
        self._note(scan_submission(request.submission, request.problem.source, request.problem.torch_ops))
        try:
            self._run_stages()
        except _Verdicted as ended:
            return self._ended(ended.failure)
        flags = [f for f in self.findings if f.severity is Severity.FLAG]
        if flags:
            return self.result(Verdict.FLAGGED, Failure(Stage(self.stage), flags[0].code, flags[0].message))
        return self.result(Verdict.CORRECT, None)

    def _ended(self, failure: Failure) -> EvalResult:
        """A wrong output after an integrity check failed is the cheat's consequence: the verdict names the
        cheat (`flagged`) and keeps the wrong output as a finding. Crashes and timeouts keep their verdicts."""
        verdict = _verdict_for(failure)
        flags = [f for f in self.findings if f.severity is Severity.FLAG]
        if verdict is not Verdict.INCORRECT or not flags:
            return self.result(verdict, failure)
        self._add_finding(Finding(failure.code, Severity.INFO, f"the output was also wrong: {failure.message}"))
        return self.result(Verdict.FLAGGED, Failure(failure.stage, flags[0].code, flags[0].message))

    def _run_stages(self) -> None:
        reference = Reference(self.request.problem, self.device, self.request.trials.seed)
        submission = self.work_dir / "submission.py"
        submission.write_text(self.request.submission)
        init_inputs = self.work_dir / "init_inputs.kgt"
        tensorfile.save(init_inputs, reference.init_inputs)
        target = build_target(self.request)
        with self._stage(Stage.COMPILE, "compiling"):
            self.compiled = compile_submission(self.request.submission, submission, init_inputs,
                                               self.request.trials.seed, target, self.request.cache_dir,
                                               self.work_dir, self.launcher)
        if self.compiled.failure:
            raise _Verdicted(self.compiled.failure)
        session = RunSession(self.launcher, self.work_dir, self.compiled.extensions_dir,
                             self.device.index if self.device.type == "cuda" else None, arch_env(target))
        try:
            self._with_session(session, reference, submission, init_inputs)
        except StageFailed as failed:
            raise _Verdicted(failed.failure) from None
        finally:
            session.close()
            self.child_output = session.output()
            self._check_device_health()
        self._second_baseline(reference, init_inputs, arch_env(target))

    def _second_baseline(self, reference: Reference, init_inputs: Path, env: dict[str, str]) -> None:
        """torch.compile of the reference: a fresh earlier measurement if the request brings one, else
        measured now (after the candidate's child is gone, so the two never share the device)."""
        plan, problem = self.request.compiled_baseline, self.request.problem
        if self.candidate_timing is None:
            return
        if plan.known is not None and plan.known.problem_hash == problem.content_hash:
            self.compiled_baseline, self.compiled_baseline_reused = plan.known, True
            return
        if not plan.measure:
            return
        self.progress(Progress(Stage.TIMING, "timing torch.compile of the reference"))
        started = time.monotonic()
        job = BaselineJob(reference, self.work_dir, tuple(self.timing_paths), init_inputs, self.request.trials.seed,
                          self.request.timing, self.request.limits, self.flush_bytes, plan, tuple(env.items()))
        self.compiled_baseline = compiled_baseline.measure(job, self.launcher)
        self.stage_seconds.append(("compiled_baseline", round(time.monotonic() - started, 4)))
        self._check_device_health()

    def _with_session(self, session: RunSession, reference: Reference, submission: Path, init: Path) -> None:
        limits = self.request.limits
        with self._stage(Stage.LOAD, "loading ModelNew"):
            child_device = "cuda:0" if self.device.type == "cuda" else "cpu"
            self._note(integrity_findings(session.load(submission, init, self.request.trials.seed, child_device,
                                                       limits.load_s)))
            self.baseline = count_tree(session.child.proc.pid)
        with self._stage(Stage.CORRECTNESS, "checking correctness"):
            self._correctness(session, reference)
        if self.last_integrity is not None:
            self._note(extension_findings(self.last_integrity.extensions, "torch.ops." in self.request.submission))
        self._note(process_findings(self.baseline, count_tree(session.child.proc.pid), "during the checked calls"))
        if self.request.measure_timing:
            with self._stage(Stage.TIMING, "timing"):
                self._timing(session, reference)
            self._note(process_findings(self.baseline, count_tree(session.child.proc.pid), "by the end of timing"))

    def _trial_seeds(self) -> list[tuple[int, bool, int]]:
        """Public trials derive from the request's seed alone; secret ones and the timing sets also from the
        secret, which never reaches the child (it gets input files, never seeds)."""
        plan = self.request.trials
        public = [(i, False, derive_seed(plan.seed, "trial", i, "")) for i in range(plan.public_trials)]
        secret = [(plan.public_trials + j, True, derive_seed(plan.seed, "secret", j, self.secret))
                  for j in range(plan.secret_trials)]
        return public + secret

    def _correctness(self, session: RunSession, reference: Reference) -> None:
        seeds = self._trial_seeds()
        for done, (index, secret, seed) in enumerate(seeds):
            self.progress(Progress(Stage.CORRECTNESS, "correctness", done, len(seeds)))
            inputs = reference.make_inputs(seed)
            started = time.perf_counter()
            refs, oracles = reference.outputs(inputs)
            settle = _settle_s(time.perf_counter() - started)
            inputs_path, outputs_path = self.work_dir / "trial_inputs.kgt", self.work_dir / "trial_outputs.kgt"
            tensorfile.save(inputs_path, inputs)
            reply = session.call(inputs_path, outputs_path, [r.numel() * r.element_size() for r in refs],
                                 self.request.limits.call_s, settle)
            outs = to_device(tensorfile.load(outputs_path), self.device)
            self._judge_call(index, secret, reply, _mutated(inputs, reply), outs, (refs, oracles))
        self.progress(Progress(Stage.CORRECTNESS, "correctness", len(seeds), len(seeds)))

    def _judge_call(self, index: int, secret: bool, reply: CallReply, mutated: list[int], outs: list[Any],
                    expected: tuple[list[torch.Tensor], list[torch.Tensor] | None]) -> None:
        refs, oracles = expected
        self.last_integrity = reply.integrity
        self._note(integrity_findings(reply.integrity))
        if reply.changed_after_return:
            self._add_finding(Finding("output_changed_after_return", Severity.FLAG,
                "the output kept changing after forward() returned: it was still being written by work the"
                " harness did not wait for (another stream, a thread or process, or a batched future call)."))
        structure = check_structure(reply.outputs, refs, self.device.type)
        if structure is None and mutated:
            which = ", ".join(str(i) for i in mutated)
            structure = _comparison_failure("input_mutated", f"forward() modified input(s) {which} in place;"
                                            " the reference does not. Work on copies or new tensors.")
        comparison = structure or compare_values(outs, refs, oracles, self.request.problem.precision)
        self.trials.append(TrialResult(index, secret, comparison.passed, comparison.message,
                                       comparison.max_abs_error, comparison.max_rel_error,
                                       comparison.rel_error_vs_reference, comparison.rel_error_vs_oracle,
                                       comparison.reference_error_vs_oracle))
        if not comparison.passed:
            kind = "secret" if secret else "public"
            raise _Verdicted(Failure(Stage.CORRECTNESS, comparison.code,
                                     f"trial {index} ({kind} seed): {comparison.message}"))

    def _add_finding(self, finding: Finding) -> None:
        if all(f.code != finding.code for f in self.findings):
            self.findings.append(finding)

    def _note(self, findings: Iterable[Finding]) -> None:
        for finding in findings:
            self._add_finding(finding)

    def _timing(self, session: RunSession, reference: Reference) -> None:
        params, plan, limits = self.request.timing, self.request.trials, self.request.limits
        sets, paths = save_timing_sets(reference, self.work_dir, params.input_sets, plan.seed, self.secret)
        flush_bytes = params.flush_bytes or timing.default_flush_bytes(self.device)
        self.timing_paths, self.flush_bytes = paths, flush_bytes
        rotation = timing.InputRotation([to_device(s, self.device) for s in sets])
        self.progress(Progress(Stage.TIMING, "timing the reference", 0, 3))
        before = _time_reference(reference, rotation, params, flush_bytes)
        self.progress(Progress(Stage.TIMING, "timing the candidate", 1, 3))
        settle = _settle_s(statistics.median(before.raw.wall_ms) / 1000.0)
        self._note(integrity_findings(session.warmup(paths, params, flush_bytes, limits.timing_s, settle)))
        candidate = session.time(params, limits.timing_s)
        self.progress(Progress(Stage.TIMING, "timing the reference again", 2, 3))
        after = _time_reference(reference, rotation, params, flush_bytes)
        del rotation
        self.method = timing.method_record(params, flush_bytes, self.device, candidate.l2_status)
        ref_samples = before.raw.device_ms + after.raw.device_ms
        self.reference_timing = timing.summarize(ref_samples, f"{before.raw.stop_reason}+{after.raw.stop_reason}")
        loop = ReferenceLoop(min(before.wall_gap_ms, after.wall_gap_ms),
                             max(before.overhead_per_rep_ms, after.overhead_per_rep_ms))
        candidate = self._confirmed(session, candidate, loop)
        self.candidate_timing = timing.summarize(candidate.device_ms, candidate.stop_reason)
        if plan.recheck_timed_outputs:
            self._recheck_timed(session, reference, sets)
        self._check_roofline()
        self._note(speedup_findings(self.speedup()))
        self.progress(Progress(Stage.TIMING, "timing", 3, 3))

    def _confirmed(self, session: RunSession, candidate: TimedReply, loop: ReferenceLoop) -> TimedReply:
        """Notes the timed phase's findings. Time unaccounted for between reps is timed once more before it
        is flagged: a loaded host can stall the child once (seen on a 2-core CI machine running two workers),
        a patched clock or work hidden between reps does it every time. The second phase's samples are the
        ones reported; every other finding of the first phase stands."""
        findings = timing_findings(candidate, loop)
        if any(f.code == INCONSISTENT for f in findings):
            self.progress(Progress(Stage.TIMING, "timing the candidate again", 2, 3))
            findings = [f for f in findings if f.code != INCONSISTENT]
            candidate = session.time(self.request.timing, self.request.limits.timing_s)
            findings += timing_findings(candidate, loop)
        self._note(findings)
        return candidate

    def _check_roofline(self) -> None:
        if self.device.type == "cuda" and self.candidate_timing is not None:
            self.roofline = floor_for(self.request.problem, torch.cuda.get_device_name(self.device))
            self._note(roofline_findings(self.candidate_timing.median_ms, self.roofline))

    def _recheck_timed(self, session: RunSession, reference: Reference, sets: list[list[Any]]) -> None:
        # Into the work dir itself: a root judge's child runs as another uid and can write only there.
        folder = self.work_dir
        reply = session.timed_outputs(folder, self.request.limits.call_s)
        self._note(integrity_findings(reply.integrity))
        if reply.changed_after_return:
            self._add_finding(Finding("timed_output_changed_after_return", Severity.FLAG,
                f"timed output(s) of rep(s) {', '.join(map(str, reply.changed_after_return[:8]))} changed after"
                " their rep ended (after its device-wide synchronize): work outlived the timed call."))
        self._recheck(reference, sets, folder, reply.kept)

    def _recheck(self, reference: Reference, sets: list[list[Any]], folder: Path, kept: int) -> None:
        """Compare the sampled timed outputs against the reference on the same fresh inputs (THREATS.md 5-7)."""
        which = [[timing.scalable(v) for v in s] for s in sets]
        # The child keeps the last output of each input set plus a sample; a larger count is not its harness.
        if not 0 <= kept <= len(sets) + timing.SAMPLED_OUTPUTS:
            raise _Verdicted(Failure(Stage.TIMING, "timed_output_wrong",
                                     f"the harness reported {kept} timed outputs; it keeps at most"
                                     f" {len(sets) + timing.SAMPLED_OUTPUTS}"))
        for i in range(kept):
            set_index, step, rep, stored = _timed_entry(_load_timed(folder / f"timed_{i}.kgt"), len(sets))
            inputs = timing.scaled_inputs(to_device(sets[set_index], self.device), step, which[set_index])
            outs = to_device(stored, self.device)
            refs, oracles = reference.outputs(inputs)
            if any(o is None for o in outs) or len(outs) != len(refs) or any(
                    tuple(o.shape) != tuple(r.shape) or o.dtype != r.dtype for o, r in zip(outs, refs, strict=True)):
                raise _Verdicted(Failure(Stage.TIMING, "timed_output_wrong",
                                         f"timed rep {rep}: the output of a timed call has the wrong structure"))
            comparison = compare_values(outs, refs, oracles, self.request.problem.precision)
            if not comparison.passed:
                raise _Verdicted(Failure(Stage.TIMING, "timed_output_wrong",
                                         f"timed rep {rep} (input set {set_index}, scale step {step}): a timed"
                                         f" call's output is wrong although the checked calls were right:"
                                         f" {comparison.message}"))

    def speedup(self) -> float | None:
        if self.reference_timing is None or self.candidate_timing is None or self.candidate_timing.median_ms <= 0:
            return None
        return self.reference_timing.median_ms / self.candidate_timing.median_ms

    def _check_device_health(self) -> None:
        """After a child ends (perhaps with a sticky CUDA error of its own), the judge's device must work."""
        if self.device.type == "cuda":
            probe = torch.ones(16, device=self.device) * 2
            torch.cuda.synchronize(self.device)
            if float(probe.sum()) != 32.0:
                raise RuntimeError("the GPU gave a wrong answer to a health probe after the child ended")

    def result(self, verdict: Verdict, failure: Failure | None) -> EvalResult:
        problem = self.request.problem
        compiled = self.compiled
        return EvalResult(
            verdict=verdict, problem=problem.name, problem_hash=problem.content_hash,
            precision=problem.precision.describe(), failure=failure, trials=tuple(self.trials),
            reference_timing=self.reference_timing, candidate_timing=self.candidate_timing,
            speedup=self.speedup() if verdict in (Verdict.CORRECT, Verdict.FLAGGED) else None,
            method=self.method, findings=tuple(self.findings),
            environment=environment.describe(self.device, self.launcher.level),
            stage_seconds=tuple(self.stage_seconds),
            compile_cache_hit=bool(compiled and compiled.cache_hit),
            compile_log=compiled.log[-8000:] if compiled else "",
            child_output=self.child_output[-8000:],
            roofline=self.roofline,
            seed_secret="deployment" if self.request.trials.secret else "per-evaluation (no deployment secret set)",
            compiled_baseline=self.compiled_baseline, compiled_baseline_reused=self.compiled_baseline_reused,
            speedup_vs_compiled=(compiled_baseline.speedup_against(self.compiled_baseline, self.candidate_timing)
                                 if verdict in (Verdict.CORRECT, Verdict.FLAGGED) else None),
        )


def _settle_s(reference_s: float) -> float:
    return min(max(SETTLE_FACTOR * reference_s, MIN_SETTLE_S), MAX_SETTLE_S)


def _mutated(inputs: list[Any], reply: CallReply) -> list[int]:
    """Inputs changed by the call: the child's own comparison, and the judge's comparison of the child's
    post-call fingerprints with its own of the pristine inputs."""
    mine = fingerprints(inputs)
    theirs = reply.input_fingerprints
    judged = {i for i, (a, b) in enumerate(zip(mine, theirs, strict=False))
              if isinstance(inputs[i], torch.Tensor) and a != b}
    return sorted(judged | set(reply.mutated_inputs))


def _load_timed(path: Path) -> Any:
    try:
        return tensorfile.load(path)
    except (OSError, tensorfile.TensorFileError) as exc:
        raise _Verdicted(Failure(Stage.TIMING, "timed_output_wrong",
                                 f"a timed output the harness reported is missing or unreadable: {exc}")) from None


def _timed_entry(entry: Any, sets: int) -> tuple[int, int, int, list[Any]]:
    """[set, scale step, rep, [outputs]] as the child wrote it; anything else is a wrong timed output."""
    if (isinstance(entry, list) and len(entry) == 4 and all(isinstance(v, int) for v in entry[:3])
            and isinstance(entry[3], list) and 0 <= entry[0] < sets and 0 <= entry[1] <= timing.SCALE_STEPS):
        return entry[0], entry[1], entry[2], entry[3]
    raise _Verdicted(Failure(Stage.TIMING, "timed_output_wrong", "the timed outputs were not in the harness's form"))


@dataclass(frozen=True)
class _ReferenceRun:
    raw: timing.RawSamples
    wall_gap_ms: float
    overhead_per_rep_ms: float  # the judge's outer clock minus the reps' wall times, per rep


def _time_reference(reference: Reference, rotation: timing.InputRotation, params: TimingParams,
                    flush_bytes: int) -> _ReferenceRun:
    """The reference timed in the judge's clean process, with exactly the child's loop, clock, fresh inputs
    and output fingerprints; flush buffer and warm-up stay outside the outer clock, as in the child."""
    device = reference.device
    with torch.no_grad():
        flusher = timing.Flusher(device, flush_bytes)
        timing.warm_up(reference.model, rotation, device, params, timing.OutputKeeper())
        _reset_l2(device)
        started = time.perf_counter()
        raw = timing.measure(reference.model, rotation, device, params, flusher, timing.OutputKeeper())
        outer_ms = (time.perf_counter() - started) * 1000.0
    gap = statistics.median(w - d for w, d in zip(raw.wall_ms, raw.device_ms, strict=True))
    return _ReferenceRun(raw, gap, (outer_ms - sum(raw.wall_ms)) / len(raw.wall_ms))


def _reset_l2(device: torch.device) -> None:
    """The judge's own context gets the same persisting-L2 reset as the child's, so both run alike."""
    if device.type == "cuda":
        with torch.cuda.device(device):
            torch.cuda.synchronize(device)
            PersistingL2().reset(device.index or 0, torch.cuda.current_stream(device).cuda_stream)


def _comparison_failure(code: str, message: str) -> Any:
    from kernelgrade.evaluator.compare import Comparison

    return Comparison(False, code, message)


_VERDICT_BY_CODE = {
    "reply_forged": Verdict.FLAGGED,
    "build_failed": Verdict.COMPILE_ERROR,
    "timeout": Verdict.TIMEOUT,
    "compile_crashed": Verdict.RUNTIME_ERROR,
    "crashed": Verdict.RUNTIME_ERROR,
    "exception": Verdict.RUNTIME_ERROR,
}


def _verdict_for(failure: Failure) -> Verdict:
    if failure.stage is Stage.VALIDATE:
        return Verdict.REJECTED
    return _VERDICT_BY_CODE.get(failure.code, Verdict.INCORRECT)
