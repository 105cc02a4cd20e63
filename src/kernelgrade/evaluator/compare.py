"""Output comparison under a problem's precision policy (docs/timing.md, "Correctness"; docs/grading.md).

fp32 problems are judged against the float64 oracle, in norm and elementwise, with limits derived from two
yardsticks measured on the problem itself: PyTorch's own fp32 error, and the error the reference makes on
inputs rounded to TF32, the least lossy format an fp32 problem forbids. Any fp32 summation order lands far
below the second (fp32 rounds 8192 times finer than TF32); TF32, bf16 and fp16 arithmetic land on or above it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from kernelgrade.evaluator.request import PrecisionKind, PrecisionPolicy
from kernelgrade.evaluator.rounding import Rounding
from kernelgrade.evaluator.wire.tensorfile import dtype_name

# An output is taken for a lower-precision one when it is this much closer to what the reference gives on
# inputs rounded to that format than to the float64 result: a TF32 or bf16 kernel lands within fp32 rounding
# of the emulation (0.15 measured for TF32 inputs summed in another order), an honest fp32 kernel at least as
# far from it as from the truth (1 or more: the emulation's own error adds to its own).
EMULATION_MATCH = 0.25
# ... and only where the format visibly changes the result: its emulation at least this many times further
# from float64 than PyTorch's fp32. An honest kernel's rounding is independent of the format's, so it is never
# nearer the emulation than float64; the guard only excludes a format that changes (almost) nothing, whose
# emulation is then the reference itself. TF32 inputs measured 3.4x PyTorch's error on the H100's
# A.T @ B.T and tall-skinny matmuls, which a higher bar would let through.
EMULATION_DISTINCT = 2.0
# An output no further from float64 than this many times PyTorch's own error is not compared with the
# emulations: it cannot be a lower-precision result where the format is distinct, and skipping them keeps the
# common case cheap.
SIGNATURE_FROM = 2.0
# Which emulations betray a format the policy does not allow (the tf32 policy allows TF32, and fp16 has its
# mantissa).
FORBIDDEN = {PrecisionKind.FP32: (Rounding.TF32, Rounding.FP16, Rounding.BF16), PrecisionKind.TF32: (Rounding.BF16,)}


@dataclass(frozen=True)
class OutputMeta:
    """What the child reports about each output as it left forward(), before any copying."""

    type_name: str
    is_plain_tensor: bool
    device: str
    dtype: str
    shape: tuple[int, ...]
    # Why it is not a plain dense tensor with its own memory (a subclass, a lazy or wrapped tensor); "" if it is.
    why_not_plain: str = ""


@dataclass(frozen=True)
class Comparison:
    passed: bool
    code: str
    message: str
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    rel_error_vs_reference: float | None = None
    rel_error_vs_oracle: float | None = None
    reference_error_vs_oracle: float | None = None


RoundedOutputs = Callable[[Rounding], list[torch.Tensor]]


@dataclass(frozen=True)
class Expected:
    """What the judge holds for one call: the fp32 reference's outputs, the float64 oracle's (None where the
    policy needs none), and the reference's outputs on inputs and weights rounded to a lower precision,
    computed only when a verdict needs them."""

    refs: Sequence[torch.Tensor]
    oracles: Sequence[torch.Tensor] | None = None
    rounded: RoundedOutputs | None = None


def flatten_outputs(value: Any) -> list[Any]:
    """forward() may return one tensor or a tuple/list of them; compare them position by position.
    Anything else (a nested list of numbers, say) is one output, and fails the plain-tensor check."""
    if isinstance(value, tuple | list) and all(isinstance(v, torch.Tensor) for v in value):
        return list(value)
    return [value]


def check_structure(metas: Sequence[OutputMeta], refs: Sequence[torch.Tensor], device: str) -> Comparison | None:
    """Count, type, device, shape and dtype; None when they all match."""
    if len(metas) != len(refs):
        return _fail("output_count", f"forward returned {len(metas)} outputs; the reference returns {len(refs)}")
    for i, (meta, ref) in enumerate(zip(metas, refs, strict=True)):
        where = f"output {i}" if len(refs) > 1 else "the output"
        if not meta.is_plain_tensor and not meta.why_not_plain:
            return _fail("output_type", f"{where} is a {meta.type_name}, not a plain torch.Tensor")
        if not meta.is_plain_tensor:
            return _fail("output_type", f"{where} is {meta.why_not_plain}, not a plain torch.Tensor with its own"
                         " memory: lazy, proxy and subclass outputs can compute when inspected, after the clock")
        if meta.device.split(":")[0] != device:
            return _fail("output_device", f"{where} is on {meta.device}; the reference's is on {device}")
        if tuple(meta.shape) != tuple(ref.shape):
            return _fail("output_shape", f"{where} has shape {list(meta.shape)}; expected {list(ref.shape)}")
        if meta.dtype != dtype_name(ref.dtype):
            return _fail("output_dtype", f"{where} has dtype {meta.dtype}; expected {dtype_name(ref.dtype)}")
    return None


def compare_values(outs: Sequence[torch.Tensor], expected: Expected, policy: PrecisionPolicy) -> Comparison:
    """Compare every output; the first failure wins, else the worst errors are reported."""
    worst: Comparison | None = None
    refs = expected.refs
    for i, (out, ref) in enumerate(zip(outs, refs, strict=True)):
        where = f"output {i}" if len(refs) > 1 else "the output"
        result = _compare_one(out, ref, _OracleView.of(expected, i), policy, where)
        if not result.passed:
            return result
        worst = result if worst is None else _worse(worst, result)
    return worst or Comparison(True, "ok", "no outputs to compare")


@dataclass(frozen=True)
class _OracleView:
    """One output's float64 result and its lazily computed lower-precision emulations."""

    oracle: torch.Tensor
    rounded: RoundedOutputs | None
    index: int

    @classmethod
    def of(cls, expected: Expected, index: int) -> _OracleView | None:
        if expected.oracles is None:
            return None
        return cls(expected.oracles[index].double(), expected.rounded, index)

    def emulated(self, rounding: Rounding) -> torch.Tensor | None:
        return None if self.rounded is None else self.rounded(rounding)[self.index].double()


def _compare_one(out: torch.Tensor, ref: torch.Tensor, oracle: _OracleView | None,
                 policy: PrecisionPolicy, where: str) -> Comparison:
    if not (ref.is_floating_point() or ref.is_complex()):
        same = torch.equal(out, ref)
        return Comparison(same, "ok" if same else "values", "" if same else f"{where} differs from the reference")
    o, r = out.double(), ref.double()
    bad_out, bad_ref = ~torch.isfinite(o), ~torch.isfinite(r)
    if bool((bad_out & ~bad_ref).any()):
        count = int((bad_out & ~bad_ref).sum())
        return _fail("nan_or_inf", f"{where} has {count} NaN/Inf values where the reference is finite")
    finite = ~bad_ref
    # Where the reference is NaN/Inf any value passes; elsewhere the candidate's value is compared.
    o, r = o.where(finite, 0.0), r.where(finite, 0.0)
    errors = _errors_vs_reference(o, r)
    if oracle is None or policy.kind is PrecisionKind.TOLERANCE:
        return _tolerance_check(o, r, policy, where, errors)
    return _OracleCheck(o, r, oracle.oracle.where(finite, 0.0), policy, where, errors).run(oracle)


def _errors_vs_reference(o: torch.Tensor, r: torch.Tensor) -> dict[str, float]:
    diff = (o - r).abs()
    max_abs = float(diff.max()) if diff.numel() else 0.0
    max_rel = float((diff / r.abs().clamp_min(1e-12)).max()) if diff.numel() else 0.0
    return {"max_abs_error": max_abs, "max_rel_error": max_rel, "rel_error_vs_reference": relative_frobenius(o, r)}


def _tolerance_check(o: torch.Tensor, r: torch.Tensor, policy: PrecisionPolicy, where: str,
                     errors: dict[str, float]) -> Comparison:
    """KernelBench's rule, |out - ref| <= atol + rtol * |ref| against the fp32 reference, for problems that
    ask for it (and for outputs that have no float64 oracle)."""
    diff = (o - r).abs()
    mismatched = diff > policy.atol + policy.rtol * r.abs()
    if not bool(mismatched.any()):
        return Comparison(True, "ok", "", **errors)
    count, worst = int(mismatched.sum()), int(torch.argmax(diff - policy.rtol * r.abs()))
    message = (f"{where}: {count} of {mismatched.numel()} values differ from the reference by more than"
               f" atol={policy.atol:g} + rtol={policy.rtol:g} x |reference| (the problem's tolerance); the largest"
               f" is at {_position(worst, o.shape)}: {_got(o, r, worst, 'the reference')}")
    return Comparison(False, "values", message, **errors)


class _OracleCheck:
    """The fp32 and tf32 policies: relative Frobenius error against the float64 oracle within a limit, and
    every element within a bound that scales with the output's magnitude (docs/grading.md)."""

    def __init__(self, o: torch.Tensor, r: torch.Tensor, oracle: torch.Tensor, policy: PrecisionPolicy,
                 where: str, errors: dict[str, float]) -> None:
        self.o, self.oracle, self.policy, self.where = o, oracle, policy, where
        self.vs_oracle = relative_frobenius(o, oracle)
        self.ref_vs_oracle = relative_frobenius(r, oracle)
        self.diff = (o - oracle).abs()
        # The absolute part of the elementwise bound: outputs near zero in a large sum carry the rounding
        # error of the sum's terms, which scales with the output's typical size, not with their own.
        self.scale = oracle.abs().add(_rms(oracle))
        self.errors = {**errors, "rel_error_vs_oracle": self.vs_oracle,
                       "reference_error_vs_oracle": self.ref_vs_oracle}

    def run(self, view: _OracleView) -> Comparison:
        limit = self._base_limit()
        tf32_error: float | None = None
        if not self._within(limit) and self.policy.kind is PrecisionKind.FP32:
            tf32 = view.emulated(Rounding.TF32)
            tf32_error = None if tf32 is None else relative_frobenius(tf32, self.oracle)
            limit = max(limit, (tf32_error or 0.0) / self.policy.tf32_margin)
        if not self._within(limit):
            return self._failure(limit, tf32_error, view)
        matched = self._matched_format(view) if self.vs_oracle > SIGNATURE_FROM * self.ref_vs_oracle else None
        if matched is None:
            return Comparison(True, "ok", "", **self.errors)
        return self._signature_failure(*matched)

    def _base_limit(self) -> float:
        policy = self.policy
        if policy.kind is PrecisionKind.TF32:
            return max(policy.tf32_limit, policy.oracle_ratio * self.ref_vs_oracle)
        return max(policy.oracle_ratio * self.ref_vs_oracle, policy.oracle_floor)

    def _within(self, limit: float) -> bool:
        return (math.isfinite(self.vs_oracle) and self.vs_oracle <= limit
                and not bool((self.diff > self._bound(limit)).any()))

    def _bound(self, limit: float) -> torch.Tensor:
        return self.scale * (self.policy.elementwise_factor * limit)

    def _failure(self, limit: float, tf32_error: float | None, view: _OracleView) -> Comparison:
        bound = self._bound(limit)
        over = self.diff > bound
        worst = int(torch.argmax(self.diff / bound.clamp_min(torch.finfo(torch.float64).tiny)))
        where, count = self.where, int(over.sum())
        allowed = "fp32 rounding" if self.policy.kind is PrecisionKind.FP32 else "the tf32 policy"
        if count:
            what = (f"{where}: {count} of {over.numel()} values differ from the float64 result by more than"
                    f" {allowed} allows (largest at {_position(worst, self.o.shape)}: {self._got(worst)};"
                    f" allowed there {float(bound.reshape(-1)[worst]):.2g})")
        else:
            what = (f"{where}: its relative error against the float64 result is more than {allowed} allows"
                    f" (largest difference at {_position(worst, self.o.shape)}: {self._got(worst)})")
        summary = self._summary(limit, tf32_error)
        matched = self._matched_format(view)
        if matched is None:
            return Comparison(False, "values", f"{what}. {summary}", **self.errors)
        return Comparison(False, "precision", f"{what}. {summary} The output is what the reference computes on"
                          f" inputs and weights rounded to {matched[0].described}: the kernel computes at that"
                          " precision, which this problem does not allow.", **self.errors)

    def _signature_failure(self, rounding: Rounding, distance: float) -> Comparison:
        """An error small enough for fp32 rounding, but the signature of a lower precision: on long sums of
        positive values, round-to-nearest TF32 inputs average out to an error PyTorch's own fp32 can reach."""
        return Comparison(False, "precision", f"{self.where}: its error against the float64 result"
                          f" ({self.vs_oracle:.2g}) is within what fp32 rounding could explain, but the output is what"
                          f" the reference computes on inputs and weights rounded to {rounding.described}"
                          f" ({distance:.2g} from it): the kernel computes at that precision, which this problem"
                          " does not allow.", **self.errors)

    def _got(self, index: int) -> str:
        return _got(self.o, self.oracle, index, "float64")

    def _summary(self, limit: float, tf32_error: float | None) -> str:
        ratio = self.vs_oracle / self.ref_vs_oracle if self.ref_vs_oracle > 0 else math.inf
        times = "more than" if not math.isfinite(ratio) else f"{ratio:,.0f}x" if ratio >= 100 else f"{ratio:.2g}x"
        text = (f"Relative error {self.vs_oracle:.3g}, {times} PyTorch's own fp32 error"
                f" ({self.ref_vs_oracle:.2g}); the limit here is {limit:.2g}")
        if tf32_error is not None:
            text += f" (inputs rounded to TF32 give {tf32_error:.2g})"
        return text + "."

    def _matched_format(self, view: _OracleView) -> tuple[Rounding, float] | None:
        """The forbidden lower-precision format whose emulation the output matches, and the output's relative
        distance from that emulation; None if it matches none."""
        for rounding in FORBIDDEN.get(self.policy.kind, ()):
            emulated = view.emulated(rounding)
            if emulated is None or relative_frobenius(emulated, self.oracle) < EMULATION_DISTINCT * self.ref_vs_oracle:
                continue
            distance = relative_frobenius(self.o, emulated)
            if distance <= EMULATION_MATCH * self.vs_oracle:
                return rounding, distance
        return None


def _rms(t: torch.Tensor) -> float:
    return float(torch.linalg.vector_norm(t)) / math.sqrt(t.numel()) if t.numel() else 0.0


def _position(flat: int, shape: torch.Size) -> str:
    index = []
    for size in reversed(shape):
        flat, rest = divmod(flat, size)
        index.append(rest)
    return f"index {tuple(reversed(index))}" if index else "the scalar"


def _got(o: torch.Tensor, expected: torch.Tensor, index: int, source: str) -> str:
    got, want = float(o.reshape(-1)[index]), float(expected.reshape(-1)[index])
    return f"{got:.7g} where {source} gives {want:.7g}, off by {abs(got - want):.3g}"


def relative_frobenius(a: torch.Tensor, b: torch.Tensor) -> float:
    """||a - b|| / ||b||, with ||b|| = 0 handled as an absolute error."""
    num = float(torch.linalg.vector_norm((a - b).double()))
    den = float(torch.linalg.vector_norm(b.double()))
    return num / den if den > 0 else num


def _worse(a: Comparison, b: Comparison) -> Comparison:
    def key(c: Comparison) -> float:
        return c.rel_error_vs_oracle if c.rel_error_vs_oracle is not None else (c.rel_error_vs_reference or 0.0)

    return a if key(a) >= key(b) else b


def _fail(code: str, message: str) -> Comparison:
    return Comparison(False, code, message)
