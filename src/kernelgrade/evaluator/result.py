"""What the judge reports: a verdict with the evidence behind it and how every number was measured."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from kernelgrade.evaluator.codec import Codec, JSONValue
from kernelgrade.evaluator.roofline_floor import RooflineFloor

# Results are stored and read back by later versions: NaN is written as null (JSON has none), as results have
# always been, and fields a result no longer has are skipped.
STORED = Codec(nan_as_null=True, ignore_unknown=True)


class Verdict(StrEnum):
    CORRECT = "correct"
    INCORRECT = "incorrect"
    COMPILE_ERROR = "compile_error"
    RUNTIME_ERROR = "runtime_error"
    TIMEOUT = "timeout"
    REJECTED = "rejected"
    FLAGGED = "flagged"
    ERROR = "error"


class Stage(StrEnum):
    VALIDATE = "validate"
    COMPILE = "compile"
    LOAD = "load"
    CORRECTNESS = "correctness"
    TIMING = "timing"


class Severity(StrEnum):
    FLAG = "flag"  # an integrity check failed: the result is flagged and kept off leaderboards
    REVIEW = "review"  # plausible but unusual (e.g. > 10x speedup): a person should look
    INFO = "info"


@dataclass(frozen=True)
class Failure:
    """Why a submission did not get `correct`: where, a stable code, and words a person can act on."""

    stage: Stage
    code: str
    message: str
    detail: str = ""
    line: int | None = None


@dataclass(frozen=True)
class Finding:
    code: str
    severity: Severity
    message: str


@dataclass(frozen=True)
class TrialResult:
    index: int
    secret: bool
    passed: bool
    message: str = ""
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    rel_error_vs_reference: float | None = None
    rel_error_vs_oracle: float | None = None
    reference_error_vs_oracle: float | None = None


@dataclass(frozen=True)
class TimingStats:
    n: int
    median_ms: float
    mean_ms: float
    std_ms: float
    min_ms: float
    max_ms: float
    ci95_low_ms: float
    ci95_high_ms: float
    stop_reason: str
    samples_ms: tuple[float, ...] = ()
    # Median time from calling forward() until the device is idle (flush excluded): what a caller waiting on
    # the result sees, host dispatch included. Shown beside the device time, never used for the speedup.
    host_median_ms: float | None = None
    # Reps whose call took the host longer to issue than the flush ran on the device: their device time may
    # include host time.
    host_bound_reps: int = 0


@dataclass(frozen=True)
class TimingMethod:
    """How the timings were taken, recorded beside every number."""

    clock: str
    flush_bytes: int
    warmup_calls: int
    warmup_ms: float
    min_reps: int
    max_reps: int
    target_median_ci: float
    max_device_ms: float
    max_wall_ms: float
    input_sets: int
    reference_placement: str = "before and after the candidate, same device, same process layout"
    input_values: str = ("each rep: a random one of the input sets, its non-integral float inputs scaled by a random"
                         " factor in [0.875, 1); the judge re-checks a random sample of timed outputs")
    # What resetting persisting L2 (limit, stream window, lines) before timing gave: "reset", "unsupported: ..."
    l2_persisting: str = ""
    # PyTorch's precision switches while both sides were timed (correctness is always checked strict).
    precision_flags: str = "strict fp32: TF32 off in matmul and cuDNN, no reduced-precision reductions"
    # Whether each side's reps held the stream until enqueued, so that no host time is in the device time.
    stream_hold: str = ""


@dataclass(frozen=True)
class Environment:
    device_kind: str
    device_name: str
    driver: str
    torch: str
    cuda: str
    python: str
    host: str
    arch: str
    sandbox: str


class BaselineStatus(StrEnum):
    MEASURED = "measured"
    FAILED = "failed"  # torch.compile could not compile the reference, or its outputs were wrong


@dataclass(frozen=True)
class CompiledBaseline:
    """The reference under torch.compile, timed the way a candidate is (same child, loop, flush and inputs):
    a second baseline, measured once per problem version and device class and reused while fresh."""

    status: BaselineStatus
    problem_hash: str
    backend: str  # what torch.compile was asked for, e.g. "inductor (mode default)"
    device_name: str
    torch: str
    measured_at: str  # ISO 8601, UTC
    timing: TimingStats | None = None
    method: TimingMethod | None = None
    compile_seconds: float = 0.0  # the first call, which is where torch.compile does its work
    message: str = ""  # why it failed; empty when measured

    @property
    def median_ms(self) -> float | None:
        return self.timing.median_ms if self.timing is not None else None

    def to_json_dict(self) -> dict[str, JSONValue]:
        return STORED.encode_dataclass(self)

    @classmethod
    def from_json_dict(cls, data: Mapping[str, object]) -> CompiledBaseline:
        """Raises DecodeError (a ValueError) where `data` does not read as a baseline."""
        return STORED.decode(cls, data)


@dataclass(frozen=True)
class EvalResult:
    verdict: Verdict
    problem: str
    problem_hash: str
    precision: str
    failure: Failure | None = None
    trials: tuple[TrialResult, ...] = ()
    reference_timing: TimingStats | None = None
    candidate_timing: TimingStats | None = None
    speedup: float | None = None
    method: TimingMethod | None = None
    findings: tuple[Finding, ...] = ()
    environment: Environment | None = None
    # Seconds per stage in the order they ran; "stage:part" labels break a stage down and are included in it.
    stage_seconds: tuple[tuple[str, float], ...] = ()
    # The evaluation's wall time from its start to its result: the stages and what lies between them (0.0 in
    # results stored before it was recorded).
    wall_s: float = 0.0
    compile_cache_hit: bool = False
    compile_log: str = ""
    child_output: str = ""
    extra: tuple[tuple[str, str], ...] = field(default=())
    # The least time the problem's FLOP and byte counts allow on this device; None where there is no floor.
    roofline: RooflineFloor | None = None
    # Where the secret seed material came from: "deployment" or "per-evaluation" (none was configured).
    seed_secret: str = ""
    # torch.compile of the reference, when the request asked for it: measured by this evaluation, or an
    # earlier measurement it was given (reused), and the candidate's speedup against it.
    compiled_baseline: CompiledBaseline | None = None
    compiled_baseline_reused: bool = False
    speedup_vs_compiled: float | None = None
    # Graded without a baseline that its caller measures later (BaselinePlan.later), and fills in then.
    compiled_baseline_pending: bool = False

    @property
    def seconds(self) -> float:
        """The evaluation's time: its stages, each counted once."""
        return sum(seconds for label, seconds in self.stage_seconds if ":" not in label)

    @property
    def passed(self) -> bool:
        return self.verdict is Verdict.CORRECT

    def to_json_dict(self) -> dict[str, JSONValue]:
        """A plain JSON-ready form, for the CLI's --json and for storage."""
        return STORED.encode_dataclass(self)

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_json_dict(), indent=indent)

    @classmethod
    def from_json_dict(cls, data: Mapping[str, object]) -> EvalResult:
        """The inverse of to_json_dict, for results stored by any version: fields since removed are skipped,
        fields added since take their defaults. Raises DecodeError (a ValueError) naming the field that does
        not read."""
        return STORED.decode(cls, data)
