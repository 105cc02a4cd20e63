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

from kernelgrade.evaluator.compare_elements import (
    ChunkedElements,
    Elements,
    WholeElements,
    device_free_bytes,
    host_free_bytes,
    relative_frobenius,
)
from kernelgrade.evaluator.compare_memory import MemoryBudget, bytes_per_element, plan_chunks
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


__all__ = ["Comparison", "Expected", "OutputMeta", "RoundedOutputs", "check_structure", "compare_values",
           "flatten_outputs", "relative_frobenius"]

RoundedOutputs = Callable[[Rounding], list[torch.Tensor]]


@dataclass(frozen=True)
class Expected:
    """What the judge holds for one call: the fp32 reference's outputs, the float64 oracle's (None where the
    policy needs none), and the reference's outputs on inputs and weights rounded to a lower precision,
    computed only when a verdict needs them."""

    refs: Sequence[torch.Tensor]
    oracles: Sequence[torch.Tensor] | None = None
    rounded: RoundedOutputs | None = None

    def oracle_on_host(self, device: torch.device) -> bool:
        """Whether the float64 oracle of a problem on a GPU ran on the host, for want of room on the device."""
        return device.type == "cuda" and any(o.device.type == "cpu" for o in self.oracles or ())


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


def compare_values(outs: Sequence[torch.Tensor], expected: Expected, policy: PrecisionPolicy,
                   budget: MemoryBudget | None = None) -> Comparison:
    """Compare every output; the first failure wins, else the worst errors are reported. An output whose
    comparison would not fit the memory free on its device (compare_memory.py) is compared in chunks."""
    worst: Comparison | None = None
    refs = expected.refs
    for i, (out, ref) in enumerate(zip(outs, refs, strict=True)):
        where = f"output {i}" if len(refs) > 1 else "the output"
        result = _compare_one(out, ref, _OracleView.of(expected, i), policy, where, budget or MemoryBudget())
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
        return cls(expected.oracles[index], expected.rounded, index)

    def emulated(self, rounding: Rounding) -> torch.Tensor | None:
        """As computed, in the reference's dtype: the comparison widens it (chunk by chunk, where chunked)."""
        return None if self.rounded is None else self.rounded(rounding)[self.index]


def _compare_one(out: torch.Tensor, ref: torch.Tensor, oracle: _OracleView | None,
                 policy: PrecisionPolicy, where: str, budget: MemoryBudget) -> Comparison:
    if not (ref.is_floating_point() or ref.is_complex()):
        same = torch.equal(out.to(ref.device), ref)
        return Comparison(same, "ok" if same else "values", "" if same else f"{where} differs from the reference")
    uses_oracle = oracle is not None and policy.kind is not PrecisionKind.TOLERANCE
    elements = _elements(out, ref, oracle.oracle if uses_oracle and oracle else None, budget)
    count = elements.nonfinite()
    if count:
        return _fail("nan_or_inf", f"{where} has {count} NaN/Inf values where the reference is finite")
    errors = elements.errors_vs_reference()
    if oracle is None or not uses_oracle:
        return _tolerance_check(elements, policy, where, errors)
    return _OracleCheck(elements, policy, where, errors).run(oracle)


def _elements(out: torch.Tensor, ref: torch.Tensor, oracle: torch.Tensor | None, budget: MemoryBudget) -> Elements:
    """The whole tensors where the comparison fits the memory free on their device, else chunks of them."""
    per_element = bytes_per_element(exact=False, has_oracle=oracle is not None)
    plan = plan_chunks(out.numel(), per_element, device_free_bytes(ref.device, budget), host_free_bytes(budget),
                       budget.min_chunk)
    same_device = out.device == ref.device and (oracle is None or oracle.device == ref.device)
    if ref.is_complex() or (plan.whole and same_device):
        # Complex outputs are rare and small; their comparison has no chunked form.
        return WholeElements(out.to(ref.device), ref, oracle)
    return ChunkedElements(out, ref, oracle, plan)


def _tolerance_check(elements: Elements, policy: PrecisionPolicy, where: str, errors: dict[str, float]) -> Comparison:
    """KernelBench's rule, |out - ref| <= atol + rtol * |ref| against the fp32 reference, for problems that
    ask for it (and for outputs that have no float64 oracle)."""
    worst = elements.tolerance_over(policy.atol, policy.rtol)
    if worst is None:
        return Comparison(True, "ok", "", **errors)
    got = elements.values_at(worst.index)
    message = (f"{where}: {worst.count} of {elements.numel} values differ from the reference by more than"
               f" atol={policy.atol:g} + rtol={policy.rtol:g} x |reference| (the problem's tolerance); the largest"
               f" is at {_position(worst.index, elements.shape)}: {_got(got.out, got.ref, 'the reference')}")
    return Comparison(False, "values", message, **errors)


class _OracleCheck:
    """The fp32 and tf32 policies: relative Frobenius error against the float64 oracle within a limit, and
    every element within a bound that scales with the output's magnitude (docs/grading.md)."""

    def __init__(self, elements: Elements, policy: PrecisionPolicy, where: str, errors: dict[str, float]) -> None:
        self.elements, self.policy, self.where = elements, policy, where
        errors_vs_oracle = elements.oracle_errors()
        self.vs_oracle, self.ref_vs_oracle = errors_vs_oracle.out, errors_vs_oracle.reference
        # No element is held closer to float64 than oracle_ratio x PyTorch's own worst element.
        self.element_floor = policy.oracle_ratio * errors_vs_oracle.reference_worst
        self.errors = {**errors, "rel_error_vs_oracle": self.vs_oracle,
                       "reference_error_vs_oracle": self.ref_vs_oracle}

    def run(self, view: _OracleView) -> Comparison:
        limit = self._base_limit()
        tf32_error: float | None = None
        if not self._within(limit) and self.policy.kind is PrecisionKind.FP32:
            tf32 = view.emulated(Rounding.TF32)
            tf32_error = None if tf32 is None else self.elements.emulated_vs_oracle(tf32)
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
                and not self.elements.exceeds(self.policy.elementwise_factor * limit, self.element_floor))

    def _failure(self, limit: float, tf32_error: float | None, view: _OracleView) -> Comparison:
        worst = self.elements.over(self.policy.elementwise_factor * limit, self.element_floor)
        where, count, at = self.where, worst.count, _position(worst.index, self.elements.shape)
        allowed = "fp32 rounding" if self.policy.kind is PrecisionKind.FP32 else "the tf32 policy"
        got = self.elements.values_at(worst.index)
        if count:
            what = (f"{where}: {count} of {self.elements.numel} values differ from the float64 result by more than"
                    f" {allowed} allows (largest at {at}: {_got(got.out, got.oracle, 'float64')};"
                    f" allowed there {worst.bound:.2g})")
        else:
            what = (f"{where}: its relative error against the float64 result is more than {allowed} allows"
                    f" (largest difference at {at}: {_got(got.out, got.oracle, 'float64')})")
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
            if emulated is None or (self.elements.emulated_vs_oracle(emulated)
                                    < EMULATION_DISTINCT * self.ref_vs_oracle):
                continue
            distance = self.elements.out_vs(emulated)
            if distance <= EMULATION_MATCH * self.vs_oracle:
                return rounding, distance
        return None


def _position(flat: int, shape: torch.Size) -> str:
    index = []
    for size in reversed(shape):
        flat, rest = divmod(flat, size)
        index.append(rest)
    return f"index {tuple(reversed(index))}" if index else "the scalar"


def _got(got: float, want: float, source: str) -> str:
    return f"{got:.7g} where {source} gives {want:.7g}, off by {abs(got - want):.3g}"


def _worse(a: Comparison, b: Comparison) -> Comparison:
    def key(c: Comparison) -> float:
        return c.rel_error_vs_oracle if c.rel_error_vs_oracle is not None else (c.rel_error_vs_reference or 0.0)

    return a if key(a) >= key(b) else b


def _fail(code: str, message: str) -> Comparison:
    return Comparison(False, code, message)
