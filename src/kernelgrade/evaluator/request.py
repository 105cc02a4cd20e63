"""What the judge is asked to grade: the problem, the submission and the protocol to follow."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kernelgrade.evaluator.result import CompiledBaseline


class DeviceKind(StrEnum):
    CPU = "cpu"
    CUDA = "cuda"


class PrecisionKind(StrEnum):
    """How outputs are compared (docs/timing.md, "Precision policy")."""

    FP32 = "fp32"  # error against the float64 oracle within a small multiple of PyTorch's own fp32 error
    TF32 = "tf32"  # about 1e-3 relative allowed against the oracle
    TOLERANCE = "tolerance"  # explicit atol/rtol, as in KernelBench


class Interleave(StrEnum):
    """Whether the candidate and the reference are timed in turn, a few reps at a time, with both run children on
    one CPU (judge/interleaved.py), instead of one phase each."""

    AUTO = "auto"  # where most reps of both sides' phases were host-bound: their device time is host dispatch
    ON = "on"
    OFF = "off"


class TimingFlags(StrEnum):
    """PyTorch's precision switches while both sides are timed (docs/timing.md); correctness is always strict."""

    STRICT = "strict"  # true fp32: TF32 off in matmul and cuDNN (the default for fp32 problems)
    # PyTorch's own defaults (cuDNN convolutions in TF32), to compare with tables measured that way
    PYTORCH_DEFAULT = "pytorch_default"

    @property
    def described(self) -> str:
        if self is TimingFlags.STRICT:
            return "strict fp32: TF32 off in matmul and cuDNN, no reduced-precision reductions"
        return "PyTorch's defaults: cuDNN convolutions in TF32, matmul in fp32, reduced-precision reductions on"


class TorchOps(StrEnum):
    """Whether a submission may call the torch operations that compute the reference's answer (docs/threats.md 16)."""

    REPORT = "report"  # allowed, and reported for review: the speedup may be PyTorch's
    FORBID = "forbid"  # a submission that calls them is flagged


@dataclass(frozen=True)
class PrecisionPolicy:
    """How outputs are compared; docs/grading.md derives these numbers from the error model."""

    kind: PrecisionKind = PrecisionKind.FP32
    # tolerance policies only: |out - ref| <= atol + rtol * |ref|, as KernelBench checks.
    atol: float = 1e-4
    rtol: float = 1e-4
    # fp32: the relative Frobenius error against the float64 oracle may be at most the largest of
    # oracle_ratio x PyTorch's own error, 1/tf32_margin of the error the reference makes on inputs and weights
    # rounded to TF32, and oracle_floor. Honest fp32 summation orders measured 0.2-19x PyTorch's error (a
    # sequential sum of 16384 terms is the 19x); TF32 inputs give 800-1100x on a matmul, bf16 about 9000x.
    oracle_ratio: float = 16.0
    tf32_margin: float = 16.0
    # 16 fp32 units in the last place: a reference that is exact (relu, max, a copy) has no error of its own,
    # and a kernel may still round a step or two differently.
    oracle_floor: float = 2.0**-20
    # Every element within elementwise_factor x the limit of (|float64 value| + the output's RMS), or within
    # oracle_ratio x the reference's own largest elementwise error, whichever is larger.
    elementwise_factor: float = 8.0
    # tf32: the relative Frobenius error against the oracle may be at most this.
    tf32_limit: float = 1e-3

    def describe(self) -> str:
        if self.kind is PrecisionKind.FP32:
            return (
                f"fp32: error against float64 <= max({self.oracle_ratio:g} x PyTorch's fp32 error,"
                f" 1/{self.tf32_margin:g} of TF32-rounded inputs' error), each element within"
                f" {self.elementwise_factor:g} x that of |value| + RMS or {self.oracle_ratio:g} x PyTorch's worst"
                " element's error"
            )
        if self.kind is PrecisionKind.TF32:
            return (f"tf32: error against float64 <= max({self.tf32_limit:g}, {self.oracle_ratio:g} x PyTorch's"
                    f" fp32 error), each element within {self.elementwise_factor:g} x that of |value| + RMS or"
                    f" {self.oracle_ratio:g} x PyTorch's worst element's error")
        return f"tolerance: atol={self.atol:g} rtol={self.rtol:g}"


@dataclass(frozen=True)
class ProblemSpec:
    """A reference problem in the KernelBench format plus the metadata the judge needs."""

    name: str
    source: str
    device: DeviceKind = DeviceKind.CUDA
    precision: PrecisionPolicy = field(default_factory=PrecisionPolicy)
    flops: float | None = None
    bytes_moved: float | None = None
    content_hash: str = ""
    torch_ops: TorchOps = TorchOps.REPORT
    timing_flags: TimingFlags = TimingFlags.STRICT


@dataclass(frozen=True)
class TimingParams:
    """The timing protocol of docs/timing.md; every number is recorded beside the result."""

    warmup_calls: int = 3
    warmup_ms: float = 25.0
    # docs/timing.md's floor is 10; with 10 the median of a slightly bimodal kernel moved 2-3 % between gradings
    # on an H100, with 20 it settles.
    min_reps: int = 20
    max_reps: int = 1000
    # Stop once the 95 % CI of the median (what is reported) is this tight, relative to the median, on each
    # side. The median's, not the mean's: one rep that a host hiccup stretched tenfold kept the mean of a 5 us
    # kernel from a 0.5 % standard error for a thousand reps, and moves the median by one rank.
    target_median_ci: float = 0.01
    max_device_ms: float = 2000.0
    max_wall_ms: float = 30000.0
    input_sets: int = 3
    # 0 means "choose": max(2 x L2, 256 MiB) on a GPU; 2 x LLC within [64, 256] MiB on the CPU.
    flush_bytes: int = 0
    # The precision switches both sides are timed under; the judge sets it from the problem.
    flags: TimingFlags = TimingFlags.STRICT
    # Hold the stream until each rep is wholly enqueued (stream_hold.py), so that a busy host's dispatch never
    # lands in device time; off only to compare with the protocol that relies on the flush to cover it.
    hold_stream: bool = True
    # Reps on each side of the candidate that check the reference against its distribution stored by an earlier
    # evaluation on this device class (judge/reference_timing.py); 0: the reference is timed in full before and
    # after every candidate. Ten a side, twenty in all, is the floor a full measurement never goes under.
    reference_check_reps: int = 10
    # The check's median may be this far from the stored median, relative to it, for the stored distribution to
    # stand: more than the 1 % precision a full measurement stops at, less than the 10 % a speedup band allows.
    reference_drift: float = 0.03
    interleave: Interleave = Interleave.AUTO


@dataclass(frozen=True)
class TrialPlan:
    """How many correctness trials to run and where their seeds come from."""

    public_trials: int = 5
    secret_trials: int = 2
    seed: int = 42
    # Per-deployment secret mixed into the seeds of the secret trials and the timing inputs.
    secret: str = ""
    recheck_timed_outputs: bool = True


# Reading tensors from the work dir and writing them there is the harness's work, not the submission's: a stage
# that moves them gets this long per byte on top of its limit. 256 MiB/s is a busy host's disk (page-cache reads
# and writes run several times faster), so a 6 GiB output adds 24 s and a 4 MiB one 16 ms.
MOVE_BYTES_PER_S = 256 * 1024**2


@dataclass(frozen=True)
class Limits:
    """Wall-clock deadlines for each child stage, in seconds."""

    # A typical load_inline CUDA build takes about 50 s on a 16-core GPU host; five times that lets slow but
    # honest builds through while cutting off runaway template instantiation.
    compile_s: float = 300.0
    # Importing torch and the prebuilt extension takes seconds; a minute covers a cold disk cache.
    load_s: float = 60.0
    # Problems are sized for milliseconds per call; a minute lets a kernel 1000x slower than the reference
    # still get a verdict while a hung one releases the device soon.
    call_s: float = 60.0
    # The timing loop caps itself at 30 s of wall time; the rest is warm-up and slack for a slow kernel.
    timing_s: float = 120.0

    @staticmethod
    def moving(limit_s: float, nbytes: int) -> float:
        """`limit_s` for a stage that also reads or writes `nbytes` of tensor files (inputs, outputs)."""
        return limit_s + nbytes / MOVE_BYTES_PER_S


@dataclass(frozen=True)
class BaselinePlan:
    """Whether to report a speedup against torch.compile of the reference, and where that number comes from."""

    # Measure torch.compile of the reference (after the candidate's timing) when `known` is None.
    measure: bool = False
    # A fresh measurement for this problem version on this device class, taken earlier: reused as is.
    known: CompiledBaseline | None = None
    # Without `known`, the caller measures it apart from this evaluation (a worker, between jobs), and a timed
    # result says that its baseline is pending.
    later: bool = False
    # Inductor compiles the reference on its first call; a large fused problem takes a minute or two on a
    # loaded host with one compile thread, and ten minutes means it is not going to finish.
    compile_s: float = 600.0
    mode: str = "default"  # torch.compile's mode


@dataclass(frozen=True)
class EvalRequest:
    problem: ProblemSpec
    submission: str
    cache_dir: Path
    work_root: Path
    device_index: int = 0
    trials: TrialPlan = field(default_factory=TrialPlan)
    timing: TimingParams = field(default_factory=TimingParams)
    limits: Limits = field(default_factory=Limits)
    max_source_bytes: int = 512 * 1024
    compile_jobs: int = 4
    # Compile load_inline's main.cpp against a precompiled torch/extension.h (built once per compiler, torch
    # and flags under cache_dir/pch) where the call's flags allow it. Off by default: the first build of each
    # flag variant also builds its PCH (about a build's time and 0.8 GB), which a one-off grading never repays.
    precompiled_header: bool = False
    # Build a load_inline call's CUDA sources without their `#include <torch/extension.h>` first (about half of
    # nvcc's time), and as given where that build fails (child/lean_header.py).
    lean_cuda_header: bool = True
    measure_timing: bool = True
    compiled_baseline: BaselinePlan = field(default_factory=BaselinePlan)
    # The cores a build runs on, so that it never shares a core with a measurement (empty: wherever the judge
    # runs); the worker plans them with the judges' own cores (worker/cores.py).
    build_cpus: tuple[int, ...] = ()
