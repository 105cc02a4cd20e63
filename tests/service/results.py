"""Results with every part filled in (failure, findings, trials, timings with samples, method, environment,
torch.compile baseline), recorded through the worker's outcome_from_result as a judge records them."""

from __future__ import annotations

from kernelgrade.evaluator import (
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
from kernelgrade.storage.database import Database
from kernelgrade.storage.jobs import Lease, claim_next, finish_job
from kernelgrade.worker.job_outcome import outcome_from_result

MIB = 1024 * 1024


def stats(median: float, samples: tuple[float, ...] = ()) -> TimingStats:
    samples = samples or (median * 0.98, median, median * 1.03)
    return TimingStats(n=len(samples), median_ms=median, mean_ms=sum(samples) / len(samples), std_ms=0.02,
                       min_ms=min(samples), max_ms=max(samples), ci95_low_ms=median * 0.97,
                       ci95_high_ms=median * 1.02, stop_reason="target precision", samples_ms=samples,
                       host_median_ms=median * 1.2, host_bound_reps=1)


def full_result(verdict: Verdict = Verdict.FLAGGED, sandbox: str = "bwrap") -> EvalResult:
    """A flagged result: timed, with a failure whose detail quotes the source, and a reused compiled baseline."""
    method = TimingMethod(clock="perf_counter_ns", flush_bytes=64 * MIB, warmup_calls=3, warmup_ms=5.0, min_reps=10,
                          max_reps=200, target_median_ci=0.02, max_device_ms=300.0,
                          max_wall_ms=1500.0, input_sets=2, l2_persisting="not applicable (CPU)",
                          precision_flags="strict fp32")
    baseline = CompiledBaseline(status=BaselineStatus.MEASURED, problem_hash="h", backend="inductor (mode default)",
                                device_name="Test CPU", torch="2.x", measured_at="2026-11-20T10:00:00+00:00",
                                timing=stats(2.5), method=method, compile_seconds=12.0)
    return EvalResult(
        verdict=verdict, problem="add_relu", problem_hash="h", precision="fp32",
        failure=Failure(Stage.TIMING, "outputs_precomputed", "the outputs were ready before the timed call",
                        detail="Traceback (most recent call last):\n  File \"submission.py\", line 7\nsecret_line()",
                        line=7),
        trials=(TrialResult(0, False, True, max_abs_error=1e-7, max_rel_error=2e-7, rel_error_vs_reference=3e-7),
                TrialResult(1, True, False, "values differ", max_abs_error=0.5, max_rel_error=None)),
        reference_timing=stats(3.0, (2.9, 3.0, 3.1, 3.2)), candidate_timing=stats(1.5), speedup=2.0, method=method,
        findings=(Finding("outputs_precomputed", Severity.FLAG, "outputs existed before the call"),
                  Finding("large_speedup", Severity.REVIEW, "2x over the reference")),
        environment=Environment(device_kind="cpu", device_name="Test CPU", driver="", torch="2.x", cuda="",
                                python="3.11", host="test-host", arch="x86_64", sandbox=sandbox),
        stage_seconds=(("compile", 1.0), ("timing", 2.0)), compile_log="built", child_output="printed",
        compiled_baseline=baseline, compiled_baseline_reused=True, speedup_vs_compiled=1.25)


def record(database: Database, result: EvalResult, device_class: str = "cpu-test") -> None:
    """Claim the oldest queued job and record `result` for it, as a judge does."""
    with database.session() as session:
        job = claim_next(session, Lease("judge", 60), {"cpu": device_class}, 3)
        assert job is not None
        assert finish_job(session, job.evaluation_id, "judge", outcome_from_result(result))
