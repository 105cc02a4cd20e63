"""The API's request and response bodies (pydantic, at the HTTP edge only)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

VerdictName = Literal["correct", "incorrect", "compile_error", "runtime_error", "timeout", "rejected", "flagged",
                      "error"]
StatusName = Literal["queued", "compiling", "running", "done"]
NAME_PATTERN = r"^[A-Za-z0-9_.@+-]+$"
# Free text: anything but NUL, which Postgres text cannot hold and no name or source contains. Refused at the
# edge on every backend, so that SQLite and Postgres deployments answer the same.
TEXT_PATTERN = r"^[^\x00]*$"
# Row ids are Integer columns: 32 bits on Postgres (64 on SQLite). A larger number names nothing, and Postgres
# refuses it as a query parameter of that type.
MAX_ID = 2**31 - 1
# Submission ids in one lookup or wait: an RL loop's round of a hundred-odd in one call, while the answer (each
# result with its trials, for its submitter) stays a few MiB. The same as the listing's largest page.
MAX_IDS = 200
# The longest a wait for results holds its request open. Proxies and load balancers commonly drop an idle
# connection after 60 s (nginx's proxy_read_timeout, AWS ALB's idle timeout), and a held request keeps a
# connection of the server's; a caller that wants longer asks again, which the Python client does.
MAX_WAIT_S = 60.0
# A wait's length where the caller names none: half the longest, so well inside those idle limits.
DEFAULT_WAIT_S = 30.0
EXAMPLE_SOURCE = ("import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
                  "    def forward(self, a, b):\n        return torch.clamp_min(a + b, 0.0)\n")


class ErrorBody(BaseModel):
    code: str = Field(description="stable, for programs", examples=["problem_not_found"])
    message: str = Field(description="what went wrong and what to do", examples=["no problem named 'x'"])
    details: list[dict[str, str]] | None = None


class ErrorResponse(BaseModel):
    error: ErrorBody


# Request bodies are strict: `"force": 0` or `"level": "1"` is refused rather than coerced, so a body is accepted
# exactly when it matches the documented schema. Defaults are given as `default=`, which type checkers read, so
# that the Python client's users construct a SubmissionIn with only the fields they set.
class SubmissionIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, json_schema_extra={"examples": [
        {"problem": "add_relu", "source": EXAMPLE_SOURCE, "model": "my-model-v1"}]})

    problem: str = Field(min_length=1, max_length=200, pattern=TEXT_PATTERN,
                         description="problem name (its latest version)")
    source: str = Field(pattern=TEXT_PATTERN, description="the Python file defining ModelNew")
    submitter: str | None = Field(default=None, min_length=1, max_length=100, pattern=NAME_PATTERN,
                                  description="open mode only; with an API key the key's name is the submitter")
    model: str = Field(default="", max_length=200, pattern=TEXT_PATTERN,
                       description="model or agent label, for the leaderboards")
    force: bool = Field(default=False, description="grade again even if this exact source was graded before")
    public: bool = Field(default=False, description="let everyone read the source (results are always public)")
    device: str | None = Field(default=None, min_length=1, max_length=60, pattern=NAME_PATTERN,
                               description="device class to grade on, e.g. cuda-h100 (default: the problem's kind)")


class BatchIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    submissions: list[SubmissionIn] = Field(min_length=1)


class ProgressOut(BaseModel):
    stage: str
    message: str
    done: int
    total: int


class TimingOut(BaseModel):
    n: int
    median_ms: float
    mean_ms: float
    std_ms: float
    min_ms: float
    max_ms: float
    ci95_low_ms: float
    ci95_high_ms: float
    stop_reason: str
    host_median_ms: float | None = Field(
        None, description="median time from calling forward() until the device is idle, host dispatch included;"
                          " shown beside the device time, never used for the speedup")
    host_bound_reps: int = Field(
        0, description="reps whose call took the host longer to issue than the cache flush ran on the device:"
                       " their device time may include host time")


class FailureOut(BaseModel):
    stage: str
    code: str
    message: str
    detail: str = ""
    line: int | None = None


class FindingOut(BaseModel):
    code: str
    severity: str
    message: str


class EnvironmentOut(BaseModel):
    device_name: str | None
    driver: str | None
    torch: str | None
    cuda: str | None
    sandbox: str | None
    host: str | None
    warning: str | None = Field(None, description="set when the submission ran with no sandbox (sandbox none)")


class CompiledBaselineOut(BaseModel):
    """torch.compile of the reference, timed like the candidate: a second baseline beside the eager one."""

    status: Literal["pending", "measured", "failed"] = Field(
        description="pending: not measured yet; a judge measures it when it has no job to grade, and the"
                    " speedup_vs_compiled is filled in then. failed: torch.compile could not compile the reference"
                    " or its outputs were wrong (see message)")
    median_ms: float | None = Field(description="median time of the compiled reference; null unless measured")
    backend: str = Field(description="what torch.compile was asked for", examples=["inductor (mode default)"])
    measured_at: datetime | None = Field(description="when it was measured (UTC); null while pending")
    reused: bool = Field(description="true: a measurement taken apart from this evaluation (earlier, or after it"
                                     " while it was pending); false: measured during this evaluation")
    message: str = Field("", description="why it failed; empty when measured")


class SpeedupIntervalOut(BaseModel):
    low: float = Field(description="the low end of the reference median's 95% interval over the high end of the"
                                   " candidate's")
    high: float = Field(description="the high end of the reference median's 95% interval over the low end of the"
                                    " candidate's")


class EvaluationOut(BaseModel):
    id: int
    status: StatusName
    verdict: VerdictName | None
    requested_device: str
    device_class: str | None
    attempts: int
    speedup: float | None = Field(description="eager reference median / candidate median")
    speedup_vs_compiled: float | None = Field(
        None, description="torch.compile reference median / candidate median; null without a measured compiled"
                          " baseline (yet: see compiled_baseline.status) or when the verdict is neither correct nor"
                          " flagged")
    speedup_interval: SpeedupIntervalOut | None = Field(
        None, description="a 95% interval of the speedup, from the two medians' 95% intervals; one whose high bound"
                          " is more than 1.5 times its low comes with the timing_imprecise finding")
    reference_median_ms: float | None
    candidate_median_ms: float | None
    compiled_baseline: CompiledBaselineOut | None = Field(
        None, description="the torch.compile baseline the speedup_vs_compiled is against; null when none was asked"
                          " for (the deployment's KERNELGRADE_COMPILED_BASELINE) or grading stopped before timing")
    reference_timing: TimingOut | None = None
    candidate_timing: TimingOut | None = None
    timing_method: str | None = Field(
        None, description="how the timings were taken: clock, cache flush, precision switches (the full record is"
                          " in result.method)")
    reference_timed: str | None = Field(
        None, description="how the reference's timing was taken: its stored distribution confirmed by a drift check"
                          " beside the candidate, or timed in full beside it and why (docs/timing.md)")
    failure: FailureOut | None = None
    findings: list[FindingOut] = []
    environment: EnvironmentOut | None = None
    progress: ProgressOut | None = None
    queue_position: int | None = None
    last_error: str | None = None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    result: dict[str, Any] | None = Field(None, description="the full result (trials, logs); owner and admins only")


class SubmissionOut(BaseModel):
    id: int
    problem: str
    problem_version: str = Field(description="content hash of the problem version graded against")
    submitter: str
    model: str
    public: bool
    source_hash: str
    created_at: datetime
    source: str | None = Field(None, description="shown to its submitter, admins, and everyone if public")
    evaluation: EvaluationOut | None
    duplicate: bool = Field(False, description="true: an earlier identical submission, returned instead")
    warnings: list[str] = []


class BatchItemOut(BaseModel):
    submission: SubmissionOut | None = None
    error: ErrorBody | None = None


class BatchOut(BaseModel):
    items: list[BatchItemOut]


class SubmissionLookupOut(BaseModel):
    items: list[SubmissionOut] = Field(description="the submissions asked for, in the order asked, without their"
                                                   " sources (GET /v1/submissions/{id} has the source)")
    missing: list[int] = Field(description="the ids asked for that name no submission")


class FinishedOut(BaseModel):
    items: list[SubmissionOut] = Field(
        description="the submissions asked for whose grading is done (evaluation.status done), in the order"
                    " asked, without their sources; empty when none was done by the timeout")


class SubmissionLimitsOut(BaseModel):
    """What one request may carry on this server; the Python client splits its calls by these."""

    max_batch: int = Field(description="submissions in one POST /v1/submissions/batch (KERNELGRADE_MAX_BATCH)")
    max_ids: int = Field(description="ids in one GET /v1/submissions/lookup or /v1/submissions/wait")
    max_wait_s: float = Field(description="the longest timeout of GET /v1/submissions/wait")


class SubmissionPageOut(BaseModel):
    items: list[SubmissionOut]
    next_cursor: str | None = Field(None, description="pass as ?cursor= for the next page; null on the last")


class ProblemSummaryOut(BaseModel):
    name: str
    suite: str
    level: int | None
    device: str
    precision: str
    version: str
    flops: float | None
    bytes: float | None
    tags: list[str]


class DeviceFitOut(BaseModel):
    device_class: str
    memory_bytes: int
    fits: bool  # least_bytes, and timing_bytes, each fit the device class's memory


class ProblemMemoryOut(BaseModel):
    """Bytes one trial holds on the judge's device, estimated from the reference run on torch's meta device
    (intermediate activations inside forward() not counted)."""

    bytes: int  # everything at once, the comparison unchunked
    least_bytes: int  # what must fit at once: the comparison is chunked where its temporaries do not fit
    inputs_bytes: int
    weights_bytes: int  # fp32 and the oracle's float64 copy
    outputs_bytes: int  # the reference's and the candidate's
    oracle_bytes: int  # float64 inputs and outputs
    comparison_bytes: int
    # The candidate's and the reference's run children together while timing, on one input set; 0 where
    # the estimate predates it.
    timing_bytes: int
    devices: list[DeviceFitOut]  # empty for CPU problems


class ProblemOut(ProblemSummaryOut):
    description: str
    precision_description: str
    atol: float
    rtol: float
    input_shapes: list[str] | None
    memory: ProblemMemoryOut | None  # None until a worker has looked, or where memory_note says why not
    memory_note: str
    source: str
    created_at: datetime


class ProblemListOut(BaseModel):
    problems: list[ProblemSummaryOut]


def _whole_number(value: object) -> object:
    """JSON Schema counts 3.0 as an integer; strict validation would refuse it."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


class ProblemIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    name: str = Field(min_length=1, max_length=200, pattern=NAME_PATTERN)
    source: str = Field(pattern=TEXT_PATTERN,
                        description="a KernelBench-format problem file (Model, get_inputs, get_init_inputs)")
    suite: str = Field("imported", min_length=1, max_length=100, pattern=NAME_PATTERN)
    level: Annotated[int | None, BeforeValidator(_whole_number)] = Field(
        None, ge=0, le=100, description="difficulty level within the suite (KernelBench: 1-4)")


class BoardEntryOut(BaseModel):
    rank: int
    submitter: str
    model: str
    speedup: float = Field(description="eager reference median / candidate median (what the board ranks by)")
    speedup_vs_compiled: float | None = Field(
        None, description="of the same result: torch.compile reference median / candidate median; null where no"
                          " compiled baseline was measured")
    submission_id: int
    reference_median_ms: float | None
    candidate_median_ms: float | None
    device_class: str | None
    finished_at: datetime | None


class ProblemBoardOut(BaseModel):
    problem: str
    version: str
    device: str | None
    entries: list[BoardEntryOut]
    flagged_excluded: int = Field(description="flagged results left off this board")


class SuiteEntryOut(BaseModel):
    model: str
    device_class: str = Field(description="the device class these results were graded on")
    problems: int = Field(description="the suite's problems this device class can grade: the denominator of fast_p")
    fast_p: dict[str, float] = Field(description="p -> fraction of the problems this device class can grade that"
                                     " the model solved correctly with speedup > p (KernelBench fast_p)")
    geomean_speedup: float | None = Field(description="geometric mean of the best correct speedup per solved problem")
    correct_rate: float = Field(description="correct results / finished results, on those problems")
    solved_problems: int
    evaluations: int


class SuiteDeviceOut(BaseModel):
    device_class: str
    device_kind: str | None = Field(description="the problems' device kind it grades (cpu, cuda); null where its"
                                    " name says neither, and then it counts every problem")
    problems: int = Field(description="the suite's problems this device class can grade")


class SuiteBoardOut(BaseModel):
    suite: str | None
    device: str | None
    problems: int = Field(description="the suite's problems, of every device kind")
    device_classes: list[SuiteDeviceOut] = Field(
        description="the device classes on the board (the one asked for, or every one with results), each with"
                    " the number of problems it can grade")
    entries: list[SuiteEntryOut] = Field(description="one per model label and device class")


class WorkerOut(BaseModel):
    name: str
    device_class: str
    serves: list[str]
    host: str
    pid: int
    versions: dict[str, str]
    current_evaluation_id: int | None
    state: Literal["idle", "busy", "offline"]
    started_at: datetime
    last_heartbeat: datetime


class WorkersOut(BaseModel):
    workers: list[WorkerOut]


class HealthOut(BaseModel):
    status: Literal["ok"]
    version: str
    database: str
    open_mode: bool
    workers_online: int
