"""A second attempt for a candidate whose run child ran out of device memory.

The judge shares the device with the child: what it keeps between evaluations (references with their
expected outputs and oracles, references' run children) and what it has cached can leave an honest
candidate too little room. On a stream of large KernelBench level 2 problems, references submitted as their
own candidates were seen ending `runtime_error` with torch.OutOfMemoryError while the judge process held
tens of GiB of an H200. An out-of-memory that may be the judge's doing is not the candidate's verdict.

So the judge lets go of everything it keeps on the device and grades once more, and the second attempt's
verdict is the one given. A submission cannot gain from faking the error: its second attempt is graded like
any evaluation, and an out-of-memory there is its verdict (`runtime_error`). It only costs the time of the
first attempt, which the result counts.
"""

from __future__ import annotations

import dataclasses

from kernelgrade.evaluator.result import EvalResult, Finding, Severity, Stage, Verdict

# The stages whose work runs in the candidate's run child, beside what the judge keeps on the device.
_CHILD_STAGES = (Stage.LOAD, Stage.CORRECTNESS, Stage.TIMING)
# How torch names a device allocation that failed, in the exception's last line the child reports.
_SIGNS = ("OutOfMemoryError", "CUDA out of memory")
# The first attempt's time, in stage_seconds: counted in `seconds` as a stage of its own.
FIRST_ATTEMPT = "first_attempt"


def deserves_another(result: EvalResult) -> bool:
    """Whether the candidate's run child ran out of device memory, which the judge's own use may have caused."""
    failure = result.failure
    return (result.verdict is Verdict.RUNTIME_ERROR and failure is not None and failure.stage in _CHILD_STAGES
            and any(sign in failure.message for sign in _SIGNS))


def after_retry(second: EvalResult, first: EvalResult) -> EvalResult:
    """The second attempt's result, saying that it is one and counting the first attempt's time."""
    peak = dict(first.extra).get("judge_peak_device_bytes")
    held = f", the judge's own allocations having peaked at {int(peak) / 1024**3:.1f} GiB" if peak else ""
    why = first.failure.message if first.failure else ""
    note = Finding("graded_again_after_out_of_memory", Severity.INFO,
                   f"the first attempt's run child ran out of device memory ({why}){held}; the judge let go of"
                   " what it keeps on the device and graded again: this is the second attempt's result.")
    return dataclasses.replace(second, findings=(*second.findings, note),
                               stage_seconds=((FIRST_ATTEMPT, first.seconds), *second.stage_seconds),
                               wall_s=first.wall_s + second.wall_s)
