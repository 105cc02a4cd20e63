"""The reference's timing for one verdict: its distribution stored by an earlier evaluation on this device
class, confirmed by a short drift check run beside the candidate; or, where there is no usable stored one or
the check fails, the reference timed in full (docs/timing.md, "The reference's timing").

The drift check is a few reps of the reference on each side of the candidate, in the reference's own run child
(reference_child.py), with the full measurement's loop, flush, warm-up and fresh inputs. Where their median is
within `reference_drift` of the stored median, the device runs the reference now as it did when the stored
distribution was measured, and the stored distribution (more reps, a tighter interval) is the reference's time.
Otherwise the reference is timed in full right after the candidate, and that measurement replaces the stored one
where it agrees with the check before the candidate.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass

import torch

from kernelgrade.evaluator import timing
from kernelgrade.evaluator.host.reference import Reference
from kernelgrade.evaluator.host.trial_store import StoredTiming
from kernelgrade.evaluator.judge.reference_child import ReferenceChild
from kernelgrade.evaluator.request import TimingParams
from kernelgrade.evaluator.result import TimingStats

# A stored distribution is confirmed for this long after it was measured, then measured again in full: clocks,
# drivers and the host's load drift in ways a short check may not catch, and an hour bounds how old a
# reference time can be while costing a problem graded all day one full measurement an hour.
MAX_AGE_S = 3600.0
BESIDE = "before and after the candidate, same device, in a run child of its own"
PLACE = "reference child"


@dataclass(frozen=True)
class ReferencePlan:
    """How this verdict times its reference: `stored` is checked, or (None) it is timed in full, for `why`."""

    protocol: str  # what a stored distribution is kept under beside the reference's own key
    stored: StoredTiming | None
    why_full: str = ""
    keeps: bool = True  # whether a full measurement is stored for later verdicts

    def params(self, params: TimingParams) -> TimingParams:
        """The parameters of each side's run: the full protocol, or a fixed number of reps for a check."""
        if self.stored is None:
            return params
        reps = params.reference_check_reps
        return dataclasses.replace(params, min_reps=reps, max_reps=reps, max_device_ms=params.max_device_ms / 4,
                                   max_wall_ms=params.max_wall_ms / 4)


@dataclass(frozen=True)
class ReferenceTiming:
    stats: TimingStats
    placement: str  # for the method record: where the reported distribution was measured


def plan(reference: Reference, params: TimingParams, flush_bytes: int, device: torch.device) -> ReferencePlan:
    protocol = _protocol(params, flush_bytes, device)
    if params.reference_check_reps <= 0:
        return ReferencePlan(protocol, None, "the request times it in full", keeps=False)
    if not reference.stores:
        return ReferencePlan(protocol, None, "this judge keeps no reference timings for this problem", keeps=False)
    stored = reference.stored_timing(protocol)
    if stored is None:
        return ReferencePlan(protocol, None, "no distribution stored for this device class yet")
    if stored.age_s() > MAX_AGE_S:
        return ReferencePlan(protocol, None, f"the stored distribution was {stored.age_s() / 3600:.1f} h old")
    return ReferencePlan(protocol, stored)


def concluded(how: ReferencePlan, reference: Reference, params: TimingParams, before: timing.RawSamples,
              after: timing.RawSamples, full_again: Callable[[], timing.RawSamples]) -> ReferenceTiming:
    """The reference's reported timing from the runs before and after the candidate; `full_again` times it in
    full, where a drift check fails. A full measurement is stored when it agrees with the runs beside it."""
    tolerance = params.reference_drift
    if how.stored is None:
        kept = _kept(reference, how, [before, after], _agree(before.device_ms, after.device_ms, tolerance))
        return ReferenceTiming(_stats(before, after), f"{BESIDE}: timed in full ({how.why_full}{_said(kept)})")
    stored, reps, checked = how.stored, params.reference_check_reps, (*before.device_ms, *after.device_ms)
    drift = _drift(checked, stored.device_ms)
    if abs(drift) <= tolerance:
        return ReferenceTiming(
            timing.summarize(stored.device_ms, stored.stop_reason, stored.wall_ms, stored.host_bound_reps),
            f"stored distribution ({len(stored.device_ms)} reps, measured {stored.age_s() / 60:.0f} min ago on "
            f"this device class), confirmed by {reps} reps {BESIDE}: median {drift:+.1%} off it, within "
            f"±{tolerance:.0%}")
    again = full_again()
    # Compared with the check before the candidate, which nothing the candidate left running can have slowed.
    kept = _kept(reference, how, [again], _agree(before.device_ms, again.device_ms, tolerance))
    return ReferenceTiming(_stats(before, again, after),
                           f"{BESIDE}: a drift check of {reps} reps each side was {drift:+.1%} off the stored "
                           f"distribution (over ±{tolerance:.0%}), so it was timed in full after the candidate as "
                           f"well{_said(kept)}")


def measured_ahead(reference: Reference, child: Callable[[], AbstractContextManager[ReferenceChild]],
                   params: TimingParams, flush_bytes: int) -> bool:
    """The reference timed in full twice, back to back, in a child `child()` loads, and stored where the runs agree:
    a problem's preparation (prepare.py), so that its first verdict checks a stored distribution instead. Whether
    one is stored now."""
    how = plan(reference, params, flush_bytes, reference.device)
    if how.stored is not None or not how.keeps:
        return how.stored is not None
    with child() as loaded:
        first, then = (loaded.run(params).raw for _ in range(2))
    agree = _agree(first.device_ms, then.device_ms, params.reference_drift)
    return _kept(reference, how, [first, then], agree) is True


def _kept(reference: Reference, plan: ReferencePlan, runs: list[timing.RawSamples], agree: bool) -> bool | None:
    """Stores `runs` as the distribution later verdicts check against, where they agree with the runs beside
    them: a device whose speed moved meanwhile is not one to judge later verdicts by. None: nothing is stored
    under this plan, or for this reference since it was seen to change when it runs."""
    if not (plan.keeps and reference.stores):
        return None
    if agree:
        joined = _joined(runs)
        reference.keep_timing(plan.protocol, StoredTiming(
            joined.device_ms, joined.wall_ms, joined.stop_reason, joined.host_bound_reps, time.time()))
    return agree


def _said(kept: bool | None) -> str:
    if kept is None:
        return ""
    return "; stored for later verdicts" if kept else "; not stored: the runs before and after the candidate differ"


def _drift(measured: tuple[float, ...], stored: tuple[float, ...]) -> float:
    """How far the median of `measured` is from that of `stored`, relative to it (inf where either is empty or
    not positive)."""
    now, then = (statistics.median(v) if v else 0.0 for v in (measured, stored))
    return now / then - 1.0 if now > 0 and then > 0 else math.inf


def _agree(first: tuple[float, ...], then: tuple[float, ...], tolerance: float) -> bool:
    return abs(_drift(then, first)) <= tolerance


def _stats(*runs: timing.RawSamples) -> TimingStats:
    joined = _joined(runs)
    return timing.summarize(joined.device_ms, joined.stop_reason, joined.wall_ms, joined.host_bound_reps)


def _joined(runs: Sequence[timing.RawSamples]) -> timing.RawSamples:
    """Runs of one reference as one sample: their reps in order, their stop reasons joined with "+"."""
    return timing.RawSamples(tuple(v for r in runs for v in r.device_ms), tuple(v for r in runs for v in r.wall_ms),
                             "+".join(r.stop_reason for r in runs), runs[0].clock,
                             host_bound_reps=sum(r.host_bound_reps for r in runs))


def _protocol(params: TimingParams, flush_bytes: int, device: torch.device) -> str:
    """What the reference's timing depends on beside its problem version, device class, torch version and
    weights: the timing parameters (not the check's own), the flush and the exact device model."""
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    protocol = dataclasses.replace(params, reference_check_reps=0, reference_drift=0.0)
    # Distributions the judge measured in its own thread, before references had a child of their own, are
    # kept under keys without the last part: they are never confirmed by a check from a child.
    return f"{protocol!r}|{flush_bytes}|{name}|{PLACE}"
