"""Both sides timed in turn, a few reps at a time, with both run children on one CPU (docs/timing.md,
"Host-bound calls").

Where a call's device time is its host's dispatch time (a forward() that waits for the device, so the stream
cannot be held: KernelBench's LSTM and GRU networks), that time follows the CPU its process runs on and the
speed mode that CPU is in, which changes every few seconds. Timed one phase after another (reference,
candidate, reference again), such a reference graded against itself came out anywhere in 0.68x-1.40x. Two
processes taking turns call by call on the same single CPU stayed within 1 % of each other over every 2 s window.
So here each side runs a round of a few reps in turn, both children on one CPU, and the rounds are pooled: every
candidate round sits between reference rounds of the same moment.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Callable, Iterable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass

from kernelgrade.evaluator.host.session import RunSession
from kernelgrade.evaluator.judge.reference_child import ReferenceChild, ReferenceRun
from kernelgrade.evaluator.request import Interleave, TimingParams
from kernelgrade.evaluator.sandbox.cpus import on_one_cpu
from kernelgrade.evaluator.wire.replies import Integrity, TimedReply, TimeReply

# A round's reps on each side take about this long. On one CPU a process kept its speed mode for seconds at a
# time, so rounds a fifth of a second long put each candidate round beside reference rounds in the same mode.
ROUND_MS = 200.0
# A round has at least one rep and at most this many: five of a 35 ms LSTM call make its 200 ms.
ROUND_REPS = 5
# Eight rounds of up to five reps give each side up to 40 reps over a few seconds, twice the full protocol's
# minimum of 20, across as many of the CPU's mode changes as a phase of such a network spans.
ROUNDS = 8


@dataclass(frozen=True)
class Turns:
    """Both sides' pooled rounds, and how they were taken (for the method record)."""

    candidate: TimedReply
    reference: ReferenceRun
    described: str


def wanted(params: TimingParams, candidate: TimedReply, reference: ReferenceRun) -> bool:
    """Whether the phases just timed leave the verdict to the host's speed: most reps of both sides host-bound
    (timing.Rep), under Interleave.AUTO."""
    if params.interleave is not Interleave.AUTO:
        return params.interleave is Interleave.ON
    return (_mostly(candidate.reported.host_bound_reps, len(candidate.reported.device_ms))
            and _mostly(reference.raw.host_bound_reps, len(reference.raw.device_ms)))


def taken(session: RunSession, reference: ReferenceChild, params: TimingParams, call_ms: float, timeout_s: float,
          one_cpu: bool) -> Turns:
    """ROUNDS rounds, the reference's first in each, of as many reps of a `call_ms` call as fill ROUND_MS;
    `one_cpu`: both children on one CPU meanwhile. Not for a CPU problem, whose time is its own computation on
    all of the judge's cores: there, each child's threads on one CPU took turns with each other, and each round's
    requests took a quarter of a second beyond their reps."""
    reps = min(ROUND_REPS, max(1, round(ROUND_MS / max(call_ms, 1e-3))))
    each = dataclasses.replace(params, min_reps=reps, max_reps=reps)
    ours: list[TimedReply] = []
    theirs: list[TimedReply] = []
    pids = [session.child.proc.pid, reference.session.child.proc.pid]
    with on_one_cpu(pids) if one_cpu else nullcontext(None) as cpu:
        for k in range(ROUNDS):
            theirs.append(reference.time(each))
            ours.append(session.time(each, timeout_s, resumes=k > 0))
    where = f"on CPU {cpu}" if cpu is not None else "where they ran before"
    stop = f"interleaved ({ROUNDS} rounds of {reps})"
    return Turns(pooled(ours, stop), ReferenceRun.of(pooled(theirs, stop)),
                 f"interleaved with the candidate: {ROUNDS} rounds of {reps} reps a side, in turn, in a run child of"
                 f" its own, both children {where}")


def pooled(rounds: Sequence[TimedReply], stop_reason: str) -> TimedReply:
    """Rounds of one side as one timed phase: their reps in order, the judge's clocks added up, and every
    finding of any round's integrity report kept."""
    reports = [r.reported for r in rounds]
    last = reports[-1]
    reported = dataclasses.replace(
        last, device_ms=_joined(reports, lambda r: r.device_ms), wall_ms=_joined(reports, lambda r: r.wall_ms),
        flush_ms=_joined(reports, lambda r: r.flush_ms), tail_ms=_joined(reports, lambda r: r.tail_ms),
        waited_ms=_joined(reports, lambda r: r.waited_ms), stop_reason=stop_reason,
        integrity=_merged([r.integrity for r in reports]),
        clock_tampered_reps=sum(r.clock_tampered_reps for r in reports),
        host_bound_reps=sum(r.host_bound_reps for r in reports),
        hold="; ".join(dict.fromkeys(r.hold for r in reports)),
        l2=next((r.l2 for r in reports if r.l2.limit_bytes), last.l2))
    seen = [r.waited_seen_ms for r in rounds]
    return TimedReply(reported, sum(r.outer_seconds for r in rounds),
                      None if any(s is None for s in seen) else sum(s or 0.0 for s in seen),
                      requests=sum(r.requests for r in rounds))


def call_ms(candidate: TimedReply, reference: ReferenceRun) -> float:
    """The longer side's median host-inclusive call: what a round's reps are counted in."""
    return max(statistics.median(candidate.reported.wall_ms), statistics.median(reference.raw.wall_ms))


def _mostly(host_bound: int, reps: int) -> bool:
    return reps > 0 and 2 * host_bound > reps


def _joined(reports: Sequence[TimeReply], values: Callable[[TimeReply], tuple[float, ...]]) -> tuple[float, ...]:
    return tuple(v for r in reports for v in values(r))


def _merged(reports: Sequence[Integrity]) -> Integrity:
    """What any round reported: a patch or a changed flag put back before the last round still counts."""
    last = reports[-1]
    return dataclasses.replace(
        last, replaced_functions=_union(r.replaced_functions for r in reports),
        precision_flags_changed=_union(r.precision_flags_changed for r in reports),
        extra_threads=max(r.extra_threads for r in reports), torch_modes=_union(r.torch_modes for r in reports),
        l2_limit_bytes=max(r.l2_limit_bytes for r in reports),
        peak_device_bytes=max(r.peak_device_bytes for r in reports))


def _union(groups: Iterable[tuple[str, ...]]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(v for group in groups for v in group))
