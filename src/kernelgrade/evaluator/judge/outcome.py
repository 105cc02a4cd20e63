"""The last stage: the verdict, from how the evaluation ended, and the EvalResult around it.

A stage that finds a verdict-worthy failure raises Verdicted; the pipeline turns it into a result here.
Only the grader's own faults become `error`.
"""

from __future__ import annotations

import dataclasses
import traceback

import torch

from kernelgrade.evaluator.host import environment
from kernelgrade.evaluator.judge import compiled_baseline
from kernelgrade.evaluator.judge.job import Job
from kernelgrade.evaluator.judge.record import Record
from kernelgrade.evaluator.result import EvalResult, Failure, Finding, Severity, Stage, Verdict

_VERDICT_BY_CODE = {
    "reply_forged": Verdict.FLAGGED,
    "build_failed": Verdict.COMPILE_ERROR,
    "timeout": Verdict.TIMEOUT,
    "compile_crashed": Verdict.RUNTIME_ERROR,
    "crashed": Verdict.RUNTIME_ERROR,
    "exception": Verdict.RUNTIME_ERROR,
}


class Verdicted(Exception):
    """Ends the evaluation early with a failure; the verdict follows from its stage and code."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.message)
        self.failure = failure


def completed(job: Job, record: Record) -> EvalResult:
    """Every stage ran: correct, unless an integrity check flagged something on the way."""
    flags = record.flags()
    if flags:
        return build_result(job, record, Verdict.FLAGGED, Failure(Stage(job.stage), flags[0].code, flags[0].message))
    return build_result(job, record, Verdict.CORRECT, None)


def ended_early(job: Job, record: Record, failure: Failure) -> EvalResult:
    """A wrong output after an integrity check failed is the cheat's consequence: the verdict names the
    cheat (`flagged`) and keeps the wrong output as a finding. Crashes and timeouts keep their verdicts."""
    verdict = verdict_for(failure)
    flags = record.flags()
    if verdict is not Verdict.INCORRECT or not flags:
        return build_result(job, record, verdict, failure)
    record.add(Finding(failure.code, Severity.INFO, f"the output was also wrong: {failure.message}"))
    return build_result(job, record, Verdict.FLAGGED, Failure(failure.stage, flags[0].code, flags[0].message))


def grader_error(job: Job, record: Record) -> EvalResult:
    """Called while handling the grader's own exception; its traceback becomes the failure's detail."""
    failure = Failure(Stage(job.stage), "grader_error",
                      "the grader itself failed; this is not the submission's fault. It will be retried.",
                      detail=traceback.format_exc(limit=20))
    return build_result(job, record, Verdict.ERROR, failure)


def with_cleanup(result: EvalResult, seconds: float) -> EvalResult:
    """The result with the time its evaluation took to clean up after it was built (its files removed, the
    device's cache handed back): a stage of its own, `cleanup`, so that where the judge's time goes adds up."""
    return dataclasses.replace(result, stage_seconds=(*result.stage_seconds, ("cleanup", seconds)),
                               wall_s=result.wall_s + seconds)


def verdict_for(failure: Failure) -> Verdict:
    if failure.stage is Stage.VALIDATE:
        return Verdict.REJECTED
    return _VERDICT_BY_CODE.get(failure.code, Verdict.INCORRECT)


def build_result(job: Job, record: Record, verdict: Verdict, failure: Failure | None) -> EvalResult:
    problem, compiled = job.request.problem, record.compiled
    timed = verdict in (Verdict.CORRECT, Verdict.FLAGGED)
    return EvalResult(
        verdict=verdict, problem=problem.name, problem_hash=problem.content_hash,
        precision=problem.precision.describe(), failure=failure, trials=tuple(record.trials),
        reference_timing=record.reference_timing, candidate_timing=record.candidate_timing,
        speedup=record.speedup() if timed else None,
        method=record.method, findings=tuple(record.findings),
        environment=environment.describe(job.device, job.launcher.level),
        stage_seconds=tuple(job.stage_seconds), wall_s=job.wall_s,
        compile_cache_hit=bool(compiled and compiled.cache_hit),
        compile_log=compiled.log[-8000:] if compiled else "",
        child_output=record.child_output[-8000:],
        roofline=record.roofline,
        seed_secret="deployment" if job.request.trials.secret else "per-evaluation (no deployment secret set)",
        compiled_baseline=record.compiled_baseline, compiled_baseline_reused=record.compiled_baseline_reused,
        compiled_baseline_pending=record.compiled_baseline_pending,
        speedup_vs_compiled=(compiled_baseline.speedup_against(record.compiled_baseline, record.candidate_timing)
                             if timed else None),
        extra=peak_memory(job.device, record) + preparation(record) + oracles_on_host(record) + region(record),
    )


def peak_memory(device: torch.device, record: Record) -> tuple[tuple[str, str], ...]:
    """The judge's and the child's peak device memory, for operators sizing problems against devices: the
    judge's since reset_peak_memory() at the evaluation's start (one judge per device, so its own)."""
    if device.type != "cuda":
        return ()
    return (("judge_peak_device_bytes", str(torch.cuda.max_memory_allocated(device))),
            ("child_peak_device_bytes", str(record.child_peak_bytes)))


def preparation(record: Record) -> tuple[tuple[str, str], ...]:
    """How many correctness trials had their expected outputs computed, read from the store on disk or kept in
    the judge's memory: a problem prepared once is not prepared again, across restarts too; and how the
    reference's child for timing came to hold it (kept, loaded ahead, loaded)."""
    trials = tuple((f"trials_{source}", str(record.prepared[source])) for source in ("computed", "stored", "kept"))
    return trials + ((("reference_child", record.reference_child),) if record.reference_child else ())


def oracles_on_host(record: Record) -> tuple[tuple[str, str], ...]:
    """How many calls' float64 oracle ran on the host, by stage, where any did."""
    return tuple((f"oracle_on_host_{stage}", str(count)) for stage, count in sorted(record.oracles_on_host.items())
                 if count)


def region(record: Record) -> tuple[tuple[str, str], ...]:
    """The candidate's child's shared region, where the evaluation reached a child."""
    return (("shared_region", record.region),) if record.region else ()


def reset_peak_memory(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
