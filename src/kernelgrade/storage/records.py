"""What storage functions take and return: frozen dataclasses, so no Session or ORM row leaks out.

The untyped values are an evaluation's `result` and a compiled baseline's `data` (EvaluatorJson): the
evaluator's JSON, stored and returned as is. What a query filters or sorts by is a typed field beside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

# An EvalResult's or a CompiledBaseline's to_json_dict(): written by the worker, read by whoever shows it,
# never read by storage.
EvaluatorJson = dict[str, Any]


class JobStatus(StrEnum):
    QUEUED = "queued"
    COMPILING = "compiling"
    RUNNING = "running"
    DONE = "done"


UNFINISHED = (JobStatus.QUEUED.value, JobStatus.COMPILING.value, JobStatus.RUNNING.value)


class Role(StrEnum):
    ADMIN = "admin"
    SUBMITTER = "submitter"


@dataclass(frozen=True)
class ProblemMemoryNeed:
    """Bytes one trial of a problem holds on the judge's device (evaluator/problem_memory.py): `least` must
    fit at once, `total` adds the comparison's temporaries, which the judge chunks where they do not fit;
    `timing`, what its two run children hold together while the candidate is timed (0: found before it was
    counted)."""

    inputs: int
    weights: int
    outputs: int
    oracle: int
    comparison: int
    total: int
    least: int
    timing: int = 0

    def fits(self, device_bytes: int) -> bool:
        return max(self.least, self.timing) <= device_bytes


@dataclass(frozen=True)
class ProblemMeta:
    precision: str
    precision_description: str
    atol: float
    rtol: float
    flops: float | None = None
    bytes_moved: float | None = None
    tags: tuple[str, ...] = ()
    description: str = ""
    # e.g. ("float32[1024, 1024]", "float32[1024, 1024]"); None until a worker has looked.
    input_shapes: tuple[str, ...] | None = None
    # Found with the input shapes; None until then, or where the reference does not run on torch's meta
    # device, which `memory_note` then says.
    memory: ProblemMemoryNeed | None = None
    memory_note: str = ""


@dataclass(frozen=True)
class NewProblem:
    name: str
    suite: str
    level: int | None
    device_kind: str
    source: str
    content_hash: str
    meta: ProblemMeta


@dataclass(frozen=True)
class ProblemRecord:
    id: int
    name: str
    suite: str
    level: int | None
    device_kind: str
    source: str
    content_hash: str
    meta: ProblemMeta
    is_latest: bool
    created_at: datetime


@dataclass(frozen=True)
class UpsertOutcome:
    problem: ProblemRecord
    created: bool  # a new (name, hash) row
    previous_latest_hash: str | None  # the version it replaced as latest, if any


@dataclass(frozen=True)
class NewSubmission:
    problem_id: int
    submitter: str
    model: str
    source: str
    source_hash: str
    public: bool
    api_key_id: int | None
    requested_device: str


@dataclass(frozen=True)
class SubmissionRecord:
    id: int
    problem_id: int
    problem_name: str
    problem_hash: str
    submitter: str
    model: str
    source: str
    source_hash: str
    public: bool
    api_key_id: int | None
    created_at: datetime


@dataclass(frozen=True)
class EvaluationRecord:
    id: int
    submission_id: int
    requested_device: str
    device_class: str | None
    status: JobStatus
    verdict: str | None
    attempts: int
    speedup: float | None
    reference_median_ms: float | None
    candidate_median_ms: float | None
    error_code: str | None
    error_summary: str | None
    last_error: str | None
    environment: EnvironmentFields | None
    progress: ProgressUpdate | None
    result: EvaluatorJson | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    speedup_vs_compiled: float | None = None


@dataclass(frozen=True)
class SubmissionView:
    submission: SubmissionRecord
    evaluation: EvaluationRecord | None
    # Unfinished jobs for the same device queued before this one (None once it is claimed).
    queue_position: int | None = None


@dataclass(frozen=True)
class SubmissionFilter:
    problem: str | None = None
    submitter: str | None = None
    verdict: str | None = None


@dataclass(frozen=True)
class SubmissionPage:
    items: tuple[SubmissionView, ...]
    next_cursor: int | None  # the id to continue below, or None on the last page


@dataclass(frozen=True)
class EnvironmentFields:
    device_name: str | None
    driver: str | None
    torch: str | None
    cuda: str | None
    sandbox: str | None
    host: str | None


@dataclass(frozen=True)
class ProgressUpdate:
    stage: str
    message: str
    done: int = 0
    total: int = 0


@dataclass(frozen=True)
class ClaimedJob:
    evaluation_id: int
    submission_id: int
    attempt: int
    owner: str
    requested_device: str
    problem: ProblemRecord
    source: str


@dataclass(frozen=True)
class JobOutcome:
    verdict: str
    result: EvaluatorJson
    speedup: float | None
    reference_median_ms: float | None
    candidate_median_ms: float | None
    error_code: str | None
    error_summary: str | None
    environment: EnvironmentFields | None
    speedup_vs_compiled: float | None = None


@dataclass(frozen=True)
class BaselineRecord:
    """A torch.compile baseline of a problem version as stored. `data` is the evaluator's CompiledBaseline
    JSON, which storage keeps without reading it; the other fields are its columns, for lookups."""

    torch: str
    status: str  # "measured" or "failed"
    median_ms: float | None
    measured_at: datetime
    data: EvaluatorJson


@dataclass(frozen=True)
class ApiKeyRecord:
    id: int
    name: str
    role: Role
    prefix: str
    key_hash: str
    quota_per_day: int | None
    rate_per_minute: int | None
    created_at: datetime
    revoked_at: datetime | None


@dataclass(frozen=True)
class BoardEntry:
    """The best correct result of one (submitter, model) on a problem."""

    submitter: str
    model: str
    speedup: float
    submission_id: int
    reference_median_ms: float | None
    candidate_median_ms: float | None
    device_class: str | None
    finished_at: datetime | None
    speedup_vs_compiled: float | None = None


@dataclass(frozen=True)
class ModelProblemStats:
    """One model label's results on one problem and device class: finished and correct results, and the best
    correct speedup (None: no correct result)."""

    model: str
    device_class: str
    problem_name: str
    finished: int
    correct: int
    best_speedup: float | None


@dataclass(frozen=True)
class SuiteProblem:
    name: str
    device_kind: str  # "cpu" or "cuda": which device classes can grade it


@dataclass(frozen=True)
class SuiteBoardData:
    problems: tuple[SuiteProblem, ...]
    stats: tuple[ModelProblemStats, ...]


@dataclass(frozen=True)
class WorkerInfo:
    name: str
    device_class: str
    serves: tuple[str, ...]
    host: str
    pid: int
    versions: tuple[tuple[str, str], ...]
    current_evaluation_id: int | None
    started_at: datetime
    last_heartbeat: datetime
