"""Output comparison under a problem's precision policy (TIMING.md, "Correctness")."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from kernelgrade.evaluator.child.tensorfile import dtype_name
from kernelgrade.evaluator.request import PrecisionKind, PrecisionPolicy


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


def compare_values(
    outs: Sequence[torch.Tensor],
    refs: Sequence[torch.Tensor],
    oracles: Sequence[torch.Tensor] | None,
    policy: PrecisionPolicy,
) -> Comparison:
    """Compare every output; the first failure wins, else the worst errors are reported."""
    worst: Comparison | None = None
    for i, (out, ref) in enumerate(zip(outs, refs, strict=True)):
        oracle = oracles[i] if oracles is not None else None
        result = _compare_one(out, ref, oracle, policy, f"output {i}" if len(refs) > 1 else "the output")
        if not result.passed:
            return result
        worst = result if worst is None else _worse(worst, result)
    return worst or Comparison(True, "ok", "no outputs to compare")


def _compare_one(out: torch.Tensor, ref: torch.Tensor, oracle: torch.Tensor | None,
                 policy: PrecisionPolicy, where: str) -> Comparison:
    if not (ref.is_floating_point() or ref.is_complex()):
        same = torch.equal(out, ref)
        return Comparison(same, "ok" if same else "values", "" if same else f"{where} differs from the reference")
    o, r = out.double(), ref.double()
    bad_out = ~torch.isfinite(o)
    bad_ref = ~torch.isfinite(r)
    if bool((bad_out & ~bad_ref).any()):
        count = int((bad_out & ~bad_ref).sum())
        return _fail("nan_or_inf", f"{where} has {count} NaN/Inf values where the reference is finite")
    finite = ~bad_ref
    diff = (o - r).abs().where(finite, torch.zeros((), dtype=torch.float64))
    max_abs = float(diff.max()) if diff.numel() else 0.0
    rel = diff / r.abs().clamp_min(1e-12)
    max_rel = float(rel.where(finite, torch.zeros((), dtype=torch.float64)).max()) if rel.numel() else 0.0
    vs_ref = relative_frobenius(o.where(finite, r), r.where(finite, torch.zeros((), dtype=torch.float64)))
    errors = {"max_abs_error": max_abs, "max_rel_error": max_rel, "rel_error_vs_reference": vs_ref}
    tol = policy.atol + policy.rtol * r.abs()
    mismatched = (diff > tol) & finite
    if bool(mismatched.any()):
        count, total = int(mismatched.sum()), mismatched.numel()
        message = (f"{where}: {count} of {total} values outside atol={policy.atol:g} rtol={policy.rtol:g}"
                   f" (max abs error {max_abs:.3g}, max rel error {max_rel:.3g})")
        return Comparison(False, "values", message, **errors)
    if oracle is None or policy.kind is PrecisionKind.TOLERANCE:
        return Comparison(True, "ok", "", **errors)
    return _oracle_check(o, r, oracle.double(), policy, where, errors)


def _oracle_check(o: torch.Tensor, r: torch.Tensor, oracle: torch.Tensor, policy: PrecisionPolicy,
                  where: str, errors: dict[str, float]) -> Comparison:
    vs_oracle = relative_frobenius(o, oracle)
    ref_vs_oracle = relative_frobenius(r, oracle)
    if policy.kind is PrecisionKind.FP32:
        limit = max(policy.oracle_ratio * ref_vs_oracle, policy.oracle_floor)
        label = (f"fp32 policy: at most max({policy.oracle_ratio:g} x PyTorch's own {ref_vs_oracle:.2g},"
                 f" {policy.oracle_floor:g})")
    else:
        limit = policy.tf32_limit
        label = f"tf32 policy: at most {limit:g}"
    passed = math.isfinite(vs_oracle) and vs_oracle <= limit
    message = "" if passed else (
        f"{where}: relative error against the float64 oracle is {vs_oracle:.3g} ({label}); the kernel"
        " computes at lower precision than the problem allows (TF32, bf16 or fp16 arithmetic?)")
    return Comparison(passed, "ok" if passed else "precision", message,
                      rel_error_vs_oracle=vs_oracle, reference_error_vs_oracle=ref_vs_oracle, **errors)


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
