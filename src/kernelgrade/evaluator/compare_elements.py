"""The element-level quantities an output comparison needs, over the whole tensors or chunk by chunk.

compare.py states the policies and writes the messages; this module computes what they read: counts, worst
elements, maxima and relative Frobenius errors. `WholeElements` does it with whole-tensor expressions, as the
comparison always did. `ChunkedElements` does it over slices of the flattened tensors, for outputs whose
float64 temporaries would not fit the device (compare_memory.py): counts, maxima and worst elements come out
identical, and Frobenius norms are sums of squares accumulated in float64, equal up to the order of summation.
Values where the reference is NaN or Inf are zeroed on both sides first: any candidate value passes there.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

import torch

from kernelgrade.evaluator.compare_memory import ChunkPlan, MemoryBudget

_TINY = torch.finfo(torch.float64).tiny


@dataclass(frozen=True)
class Worst:
    """The elements over a bound: how many, the flat index of the worst (first of equals), the bound there."""

    count: int
    index: int
    bound: float = 0.0


@dataclass(frozen=True)
class OracleErrors:
    """The output's and the reference's relative Frobenius errors against the oracle, and the reference's
    largest elementwise error |ref - oracle| (PyTorch's own worst element)."""

    out: float
    reference: float
    reference_worst: float


@dataclass(frozen=True)
class Values:
    """One element of the candidate, the reference and the oracle (0.0 where there is none)."""

    out: float
    ref: float
    oracle: float


class Elements(Protocol):
    numel: int
    shape: torch.Size

    def nonfinite(self) -> int: ...
    def errors_vs_reference(self) -> dict[str, float]: ...
    def tolerance_over(self, atol: float, rtol: float) -> Worst | None: ...
    def oracle_errors(self) -> OracleErrors: ...
    def exceeds(self, factor: float, floor: float) -> bool: ...
    def over(self, factor: float, floor: float) -> Worst: ...
    def values_at(self, index: int) -> Values: ...
    def emulated_vs_oracle(self, emulated: torch.Tensor) -> float: ...
    def out_vs(self, emulated: torch.Tensor) -> float: ...


def relative_frobenius(a: torch.Tensor, b: torch.Tensor) -> float:
    """||a - b|| / ||b||, with ||b|| = 0 handled as an absolute error."""
    return _relative((a - b).double(), b)


def _relative(diff: torch.Tensor, b: torch.Tensor) -> float:
    """||diff|| / ||b||, for a difference already taken."""
    return _ratio(float(torch.linalg.vector_norm(diff)), float(torch.linalg.vector_norm(b.double())))


def _ratio_of_sums(num_sq: float, den_sq: float) -> float:
    """relative_frobenius from accumulated sums of squares."""
    return _ratio(math.sqrt(num_sq), math.sqrt(den_sq))


def _ratio(num: float, den: float) -> float:
    """A norm over a norm, a zero denominator leaving the numerator as an absolute error."""
    return num / den if den > 0 else num


def _sq(t: torch.Tensor) -> float:
    return float(t.double().square().sum())


def device_free_bytes(device: torch.device, budget: MemoryBudget) -> int:
    """Memory a comparison on `device` can have: what the driver reports free plus what the caching allocator
    holds unused, or the budget's figure; on the CPU, the host's."""
    if budget.device_bytes is not None:
        return budget.device_bytes
    if device.type != "cuda":
        return host_free_bytes(budget)
    free, _total = torch.cuda.mem_get_info(device)
    return int(free + torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device))


def host_free_bytes(budget: MemoryBudget) -> int:
    if budget.host_bytes is not None:
        return budget.host_bytes
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


class WholeElements:
    """The whole tensors at once. Every temporary is the output's size in float64, on a judge that compares
    gigabyte outputs a dozen times an evaluation: each is made once, and where only this class holds it, reused
    in place. Where `out` or the reference is float64 already, self.o or self.r is that tensor: nothing here
    writes into them."""

    def __init__(self, out: torch.Tensor, ref: torch.Tensor, oracle: torch.Tensor | None,
                 rms: float | None = None) -> None:
        o, r = out.double(), ref.double()
        self.bad = ~torch.isfinite(o)
        bad_ref = ~torch.isfinite(r)
        if bool(bad_ref.any()):  # zeroed on all sides where the reference is NaN or Inf: anything passes there
            finite = ~bad_ref
            self.bad &= finite
            o, r = o.where(finite, 0.0), r.where(finite, 0.0)
            oracle = None if oracle is None else oracle.double().where(finite, 0.0)
        self.o, self.r = o, r
        self.oracle = None if oracle is None else oracle.double()
        self.numel, self.shape = out.numel(), out.shape
        # A chunk's elementwise scale uses the whole output's RMS, which only the whole output gives.
        self._rms = rms
        self._diff: torch.Tensor | None = None
        self._scale: torch.Tensor | None = None
        self._oracle_norm: float | None = None

    def nonfinite(self) -> int:
        return int(self.bad.sum()) if bool(self.bad.any()) else 0

    def errors_vs_reference(self) -> dict[str, float]:
        diff = (self.o - self.r).abs_()
        max_abs = max_rel = 0.0
        if diff.numel():
            max_abs = float(diff.max())
            scale = self.r.abs().clamp_min_(1e-12)
            max_rel = float(torch.div(diff, scale, out=scale).max())
        # The norm of |o - r| is that of o - r: the same squares.
        return {"max_abs_error": max_abs, "max_rel_error": max_rel, "rel_error_vs_reference": _relative(diff, self.r)}

    def tolerance_over(self, atol: float, rtol: float) -> Worst | None:
        diff = (self.o - self.r).abs_()
        mismatched = diff > atol + rtol * self.r.abs()
        if not bool(mismatched.any()):
            return None
        return Worst(int(mismatched.sum()), int(torch.argmax(diff - rtol * self.r.abs())))

    def oracle_errors(self) -> OracleErrors:
        ref_diff = self.r - self._needs_oracle()  # one float64 temporary for both of the reference's errors
        reference = self._vs_oracle(ref_diff)
        worst = float(ref_diff.abs_().max()) if self.numel else 0.0
        del ref_diff  # before self.diff is made: one temporary at a time
        return OracleErrors(self._vs_oracle(self.diff), reference, worst)

    def exceeds(self, factor: float, floor: float) -> bool:
        # Answered from the largest difference where it is below every element's bound: the bound is at least
        # `floor`, and at least factor x RMS (rounding is monotone: |oracle| + RMS >= RMS, and so their products
        # with `factor`), so no element can exceed it. Honest outputs mostly end here, with one pass over the
        # differences instead of the bound's four over float64 tensors of the output's size: on an H200 host a
        # 6 GiB output's comparison took 306 ms against 363 ms (bench/compare_cost.py). A NaN difference
        # compares false, and takes the full way.
        largest = float(self.diff.max()) if self.numel else 0.0
        if largest <= floor or largest <= factor * self._root_mean_square():
            return False
        return bool((self.diff > self.bound(factor, floor)).any())

    def over(self, factor: float, floor: float) -> Worst:
        bound = self.bound(factor, floor)
        worst = int(torch.argmax(self.diff / bound.clamp_min(_TINY)))
        return Worst(int((self.diff > bound).sum()), worst, float(bound.reshape(-1)[worst]))

    def values_at(self, index: int) -> Values:
        oracle = 0.0 if self.oracle is None else float(self.oracle.reshape(-1)[index])
        return Values(float(self.o.reshape(-1)[index]), float(self.r.reshape(-1)[index]), oracle)

    def emulated_vs_oracle(self, emulated: torch.Tensor) -> float:
        return self._vs_oracle(emulated.double() - self._needs_oracle())

    def out_vs(self, emulated: torch.Tensor) -> float:
        return relative_frobenius(self.o, emulated.double())

    def bound(self, factor: float, floor: float) -> torch.Tensor:
        """The elementwise bound: `factor` x (|oracle| + the output's RMS), and never below `floor`. The RMS
        term is the bound's absolute part: outputs near zero in a large sum carry the rounding error of the
        sum's terms, which scales with the output's typical size, not with their own. `floor` covers what the
        RMS misses: a nonlinearity after the sum (a clamp, a GELU of mostly negative values) can leave an
        output of mostly zeros, with a tiny RMS, whose few values near zero still carry the sum's error."""
        if self._scale is None:
            self._scale = self._needs_oracle().abs().add_(self._root_mean_square())
        return torch.mul(self._scale, factor).clamp_min_(floor)

    def _root_mean_square(self) -> float:
        """The bound's absolute part: the whole output's RMS where this is a chunk of it, else the oracle's."""
        return self._rms if self._rms is not None else _root_mean(self.oracle_norm(), self.numel)

    @property
    def diff(self) -> torch.Tensor:
        if self._diff is None:
            self._diff = (self.o - self._needs_oracle()).abs_()
        return self._diff

    def oracle_norm(self) -> float:
        """||oracle||, which the relative errors and the RMS all divide by: one pass over it, however many ask."""
        if self._oracle_norm is None:
            self._oracle_norm = float(torch.linalg.vector_norm(self._needs_oracle()))
        return self._oracle_norm

    def _vs_oracle(self, diff: torch.Tensor) -> float:
        """||diff|| / ||oracle||, as relative_frobenius gives it for a difference already taken."""
        return _ratio(float(torch.linalg.vector_norm(diff)), self.oracle_norm())

    def _needs_oracle(self) -> torch.Tensor:
        assert self.oracle is not None, "the policy compares against no oracle"
        return self.oracle


def _root_mean(norm: float, numel: int) -> float:
    """The RMS of a tensor of `numel` elements whose norm is `norm`."""
    return norm / math.sqrt(numel) if numel else 0.0


class ChunkedElements:
    """The same quantities over slices of the flattened tensors, each slice widened to float64 on its own,
    on the output's device or, where the plan says so, on the host."""

    def __init__(self, out: torch.Tensor, ref: torch.Tensor, oracle: torch.Tensor | None, plan: ChunkPlan) -> None:
        self.flat = (out.reshape(-1), ref.reshape(-1), None if oracle is None else oracle.reshape(-1))
        self.numel, self.shape, self.plan = out.numel(), out.shape, plan
        self.device = torch.device("cpu") if plan.on_host else ref.device
        self._rms: float | None = None
        self._summed: _Sums | None = None

    def _chunks(self, extra: torch.Tensor | None = None) -> Iterator[tuple[int, WholeElements, torch.Tensor | None]]:
        """(offset, the chunk's elements, the chunk of `extra`) for each chunk in order."""
        flat_extra = None if extra is None else extra.reshape(-1)
        for start in range(0, self.numel, self.plan.elements):
            end = min(start + self.plan.elements, self.numel)
            yield start, self._part(start), None if flat_extra is None else flat_extra[start:end].to(self.device)

    def _part(self, start: int) -> WholeElements:
        out, ref, oracle = (None if t is None else t[start:start + self.plan.elements].to(self.device)
                            for t in self.flat)
        assert out is not None and ref is not None
        return WholeElements(out, ref, oracle, rms=self._rms)

    def nonfinite(self) -> int:
        return self._sums().nonfinite

    def errors_vs_reference(self) -> dict[str, float]:
        return dict(self._sums().reference)

    def _sums(self) -> _Sums:
        """nonfinite(), errors_vs_reference() and oracle_errors(), which every comparison asks for first, from
        one pass over the chunks: widening a chunk to float64 is most of what it costs."""
        if self._summed is None:
            reference, oracle = _ReferenceSums(), _OracleSums() if self.flat[2] is not None else None
            nonfinite = 0
            for _, part, _ in self._chunks():
                nonfinite += int(part.bad.sum())
                reference.add(part)
                if oracle is not None:
                    oracle.add(part)
            self._summed = _Sums(nonfinite, reference.result(), None if oracle is None else oracle.result())
            if oracle is not None:
                self._rms = oracle.rms(self.numel)
        return self._summed

    def tolerance_over(self, atol: float, rtol: float) -> Worst | None:
        def key(part: WholeElements) -> tuple[torch.Tensor, torch.Tensor]:
            diff = (part.o - part.r).abs()
            return diff > atol + rtol * part.r.abs(), diff - rtol * part.r.abs()

        worst = self._worst(key)
        return worst if worst.count else None

    def oracle_errors(self) -> OracleErrors:
        summed = self._sums().oracle
        assert summed is not None, "the policy compares against no oracle"
        return summed

    def exceeds(self, factor: float, floor: float) -> bool:
        self._needs_rms()
        return any(part.exceeds(factor, floor) for _, part, _ in self._chunks())

    def over(self, factor: float, floor: float) -> Worst:
        self._needs_rms()

        def key(part: WholeElements) -> tuple[torch.Tensor, torch.Tensor]:
            bound = part.bound(factor, floor)
            return part.diff > bound, part.diff / bound.clamp_min(_TINY)

        worst = self._worst(key)
        start = worst.index - worst.index % self.plan.elements
        bound = self._part(start).bound(factor, floor)[worst.index - start]
        return Worst(worst.count, worst.index, float(bound))

    def values_at(self, index: int) -> Values:
        # Moved together: the output may be held on the host while its reference is on the device.
        out, ref, oracle = (None if t is None else t[index:index + 1].to(self.device) for t in self.flat)
        assert out is not None and ref is not None
        return WholeElements(out, ref, oracle).values_at(0)

    def emulated_vs_oracle(self, emulated: torch.Tensor) -> float:
        num = den = 0.0
        for _, part, chunk in self._chunks(emulated):
            assert chunk is not None
            oracle = part._needs_oracle()
            num, den = num + _sq(chunk.double() - oracle), den + _sq(oracle)
        return _ratio_of_sums(num, den)

    def out_vs(self, emulated: torch.Tensor) -> float:
        num = den = 0.0
        for _, part, chunk in self._chunks(emulated):
            assert chunk is not None
            num, den = num + _sq(part.o - chunk.double()), den + _sq(chunk)
        return _ratio_of_sums(num, den)

    def _needs_rms(self) -> None:
        """The elementwise bound's RMS is the whole output's: a pass over the oracle before the first bound."""
        if self._rms is None:
            self.oracle_errors()

    def _worst(self, key: Callable[[WholeElements], tuple[torch.Tensor, torch.Tensor]]) -> Worst:
        """How many elements the mask of `key` selects, and where its score is largest (the first of equals,
        as torch.argmax gives it over the whole)."""
        count, best, best_index = 0, -math.inf, 0
        for start, part, _ in self._chunks():
            mask, score = key(part)
            count += int(mask.sum())
            index = int(torch.argmax(score))
            if start == 0 or float(score[index]) > best:
                best, best_index = float(score[index]), start + index
        return Worst(count, best_index)


@dataclass(frozen=True)
class _Sums:
    """What one pass over an output's chunks gathers."""

    nonfinite: int
    reference: dict[str, float]
    oracle: OracleErrors | None


class _ReferenceSums:
    """errors_vs_reference() of chunks, added one after another: maxima, and sums of squares in float64."""

    def __init__(self) -> None:
        self.max_abs = self.max_rel = self.num = self.den = 0.0

    def add(self, part: WholeElements) -> None:
        diff = (part.o - part.r).abs()
        self.max_abs = max(self.max_abs, float(diff.max()))
        self.max_rel = max(self.max_rel, float((diff / part.r.abs().clamp_min(1e-12)).max()))
        self.num, self.den = self.num + float(diff.square().sum()), self.den + _sq(part.r)

    def result(self) -> dict[str, float]:
        return {"max_abs_error": self.max_abs, "max_rel_error": self.max_rel,
                "rel_error_vs_reference": _ratio_of_sums(self.num, self.den)}


class _OracleSums:
    """oracle_errors() of chunks, added one after another."""

    def __init__(self) -> None:
        self.out_sq = self.ref_sq = self.oracle_sq = self.worst = 0.0

    def add(self, part: WholeElements) -> None:
        oracle = part._needs_oracle()
        self.out_sq += _sq(part.o - oracle)
        ref_diff = part.r - oracle
        self.ref_sq += _sq(ref_diff)
        self.oracle_sq += _sq(oracle)
        self.worst = max(self.worst, float(ref_diff.abs_().max()))

    def result(self) -> OracleErrors:
        return OracleErrors(_ratio_of_sums(self.out_sq, self.oracle_sq), _ratio_of_sums(self.ref_sq, self.oracle_sq),
                            self.worst)

    def rms(self, numel: int) -> float:
        """The whole oracle's RMS, which each chunk's elementwise bound uses."""
        return _root_mean(math.sqrt(self.oracle_sq), numel)
