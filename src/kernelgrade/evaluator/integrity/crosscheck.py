"""Cross-checks of the child's claims against what the judge observed itself, and the child's own integrity
report turned into findings (docs/threats.md 1-5, 8, 14, 16, 20)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from kernelgrade.evaluator.integrity.guard import is_clock
from kernelgrade.evaluator.integrity.proctree import TreeCount
from kernelgrade.evaluator.result import Finding, Severity
from kernelgrade.evaluator.roofline_floor import RooflineFloor
from kernelgrade.evaluator.wire.replies import Extensions, Integrity, TimedReply, TimeReply

# Host-side slack per rep beyond the reference's own: launch latency and scheduler noise on a busy host.
WALL_GAP_SLACK_MS = 0.5
# A rep's wait for a CPU (timing.Rep.waited_ms) is the child's report; the judge's own reading of the child's
# threads around each request of the phase bounds their sum, with this slack for the two readings' own moments.
WAITED_SLACK_MS = 1.0
# The device's median busy time after the end event beyond the reference's. Both are the host's wake-up from
# one wait into the next (microseconds, the same code on both sides) where nothing was left running, so the
# slack only covers a busy host's scheduling noise in a median. A side stream's last wave of a large kernel is
# 0.1-0.3 ms: the wall gap's 0.5 ms misses it where a held stream's flush absorbed the rest (timing.Rep).
TAIL_SLACK_MS = 0.05
# The wake-up grows with the wait before it: on an H100, a 0.06 ms cuBLAS matmul's median tail was 7-9 us, a
# 2.7 ms one's 12-14 us, a 21 ms one's 45-66 us (a tenth of its reps over 95 us). An honest 17 ms seed kernel came
# out 0.094 ms over its 2.7 ms reference after three phases. So the slack is also this share of the candidate's
# median device time: work hidden within it moves a speedup by at most 2 %.
TAIL_SHARE = 0.02
# Per rep, the candidate's loop overhead outside its reported times (input copy, flush, fingerprint, freeing
# its outputs) may exceed the reference's (the larger of its two runs) by this factor plus PER_REP_SLACK_MS:
# on a loaded 2-core CI machine the same loop's overhead was seen to vary 2x between runs a second apart, and
# an honest kernel that frees a large workspace after each call costs a little more than the reference.
OVERHEAD_FACTOR = 3.0
PER_REP_SLACK_MS = 1.0
# Each request of the candidate's timed phase has fixed costs the reference's loop has not: a request and reply
# over the pipe, the harness's end-of-phase integrity checks and the JSON of up to 1000 samples; a few ms together.
OUTER_FIXED_SLACK_MS = 25.0
# Unaccounted time smaller than this share of the reported total is left alone: within what loop noise can
# explain on a busy host, and a fake that small changes a speedup by less than 1.5x.
OUTER_MIN_SHARE = 0.5
# A rep's flush that ran this much longer than the reference's (relative, plus an absolute slack for the
# device's own jitter of a few microseconds) shared the device with work the call had already started.
FLUSH_STRETCH = 0.1
FLUSH_SLACK_MS = 0.005
# Speedups above this are rare enough that a person should look before they are believed (docs/threats.md 20).
REVIEW_SPEEDUP = 10.0


@dataclass(frozen=True)
class ReferenceLoop:
    """What the judge measured about its own loop when timing the reference (the lower of two runs)."""

    wall_gap_ms: float  # median per-rep (wall - device) time, the lower of the two runs
    overhead_per_rep_ms: float  # (outer clock - sum of rep walls) / reps, the higher of the two runs
    flush_ms: float = 0.0  # median device time of the flush alone, over both runs; 0 on the CPU
    tail_ms: float = 0.0  # median device time after each rep's end event (timing.Rep.tail_ms), the lower run


def flush_corrected(candidate: TimedReply, reference: ReferenceLoop) -> tuple[tuple[float, ...], list[Finding]]:
    """The candidate's samples, counting work that ran beside the flush. No synchronize separates the flush
    from the start event, so work the call puts on another stream can start while the flush still runs,
    before the clock; it then stretches the flush. Such a rep is counted from the flush's start, less the
    judge's clean flush: an honest kernel on a joined side stream is timed fairly, a cheat gains nothing."""
    reported = candidate.reported
    if not reported.flush_ms or reference.flush_ms <= 0:
        return reported.device_ms, []
    limit = reference.flush_ms * (1.0 + FLUSH_STRETCH) + FLUSH_SLACK_MS
    pairs = list(zip(reported.device_ms, reported.flush_ms, strict=True))
    stretched = sum(flush > limit for _, flush in pairs)
    if not stretched:
        return reported.device_ms, []
    samples = tuple(d + f - reference.flush_ms if f > limit else d for d, f in pairs)
    return samples, [Finding("work_during_flush", Severity.INFO,
        f"in {stretched} of {len(pairs)} timed reps the cache flush before the start event ran longer than the"
        f" judge's own ({statistics.median(f for _, f in pairs):.4f} ms median against {reference.flush_ms:.4f}"
        " ms): work of the call (on another stream) ran beside it. Those reps are timed from the flush's start,"
        " less a clean flush.")]


def timing_findings(candidate: TimedReply, reference: ReferenceLoop) -> list[Finding]:
    reported = candidate.reported
    findings = [*_stream_findings(candidate, reference), *_outer_findings(candidate, reference)]
    if reported.clock_tampered_reps > 0:
        findings.append(Finding("timer_patched", Severity.FLAG,
            f"the harness's clock was rebound during {reported.clock_tampered_reps} of {len(reported.wall_ms)}"
            " timed reps (and put back before the checks between the harness's operations)."))
    if reported.l2.limit_bytes > 0:
        findings.append(_l2_finding(reported.l2.limit_bytes))
    return findings + integrity_findings(reported.integrity)


def wall_gaps(timed: TimedReply) -> list[float]:
    """Each rep's host-inclusive time beyond its device time, less the timing thread's wait for a CPU: a busy
    host's load, not work of the call. The wait is taken out only where the judge can vouch for it: the judge
    saw the child's threads wait at least as long in all, and the call started no threads (their competition
    for the CPU could be the submission's own doing while its work ran elsewhere)."""
    reply = timed.reported
    waited, reps = reply.waited_ms, len(reply.wall_ms)
    vouched = (len(waited) == reps and not reply.integrity.extra_threads and timed.waited_seen_ms is not None
               and min(waited, default=0.0) >= 0.0
               and sum(waited) <= timed.waited_seen_ms + WAITED_SLACK_MS * timed.requests)
    taken = waited if vouched else (0.0,) * reps
    return [w - d - q for w, d, q in zip(reply.wall_ms, reply.device_ms, taken, strict=True)]


def _stream_findings(timed: TimedReply, reference: ReferenceLoop) -> list[Finding]:
    candidate = timed.reported
    gaps = wall_gaps(timed)
    median_wall = statistics.median(candidate.wall_ms)
    excess = statistics.median(gaps) - reference.wall_gap_ms
    if excess > max(WALL_GAP_SLACK_MS, 0.2 * median_wall):
        return [Finding("work_outside_timed_stream", Severity.FLAG,
            f"each call's device-wide wall time ({median_wall:.3f} ms median) exceeds its event time by"
            f" {excess:.3f} ms more than the reference's: work ran on another stream or thread after the end"
            " event, so the event time understates the kernel.")]
    return _tail_findings(candidate, reference)


def _tail_findings(candidate: TimeReply, reference: ReferenceLoop) -> list[Finding]:
    if not candidate.tail_ms:
        return []
    excess = statistics.median(candidate.tail_ms) - reference.tail_ms
    if excess <= max(TAIL_SLACK_MS, TAIL_SHARE * statistics.median(candidate.device_ms)):
        return []
    return [Finding("work_outside_timed_stream", Severity.FLAG,
        f"the device stayed busy {excess:.3f} ms (median) longer than the reference's after each call's end"
        " event, when the caller's stream had finished: the call left work on a stream it never joined, so the"
        " event time understates the kernel and the output is not ready when forward() says it is.")]


def _outer_findings(candidate: TimedReply, reference: ReferenceLoop) -> list[Finding]:
    reps, reported = len(candidate.reported.wall_ms), sum(candidate.reported.wall_ms)
    gap = candidate.outer_seconds * 1000.0 - reported
    per_rep = max(0.0, reference.overhead_per_rep_ms)
    allowed = reps * (OVERHEAD_FACTOR * per_rep + PER_REP_SLACK_MS) + candidate.requests * OUTER_FIXED_SLACK_MS
    if gap <= allowed or gap <= OUTER_MIN_SHARE * reported:
        return []
    return [Finding("timing_inconsistent", Severity.FLAG,
        f"the judge's own clock saw the timed phase take {candidate.outer_seconds * 1000:.1f} ms but the"
        f" child reported {reported:.1f} ms over {reps} reps; {gap:.1f} ms are unaccounted for where the"
        f" reference's loop needed at most {allowed:.1f} ms (a patched clock or work hidden between reps).")]


def integrity_findings(integrity: Integrity) -> list[Finding]:
    findings = _patch_findings(integrity)
    if integrity.precision_flags_changed:
        findings.append(Finding("precision_flags_changed", Severity.FLAG,
            "the submission changed global precision settings: " + ", ".join(integrity.precision_flags_changed)))
    if integrity.torch_modes:
        findings.append(Finding("torch_mode_installed", Severity.FLAG,
            f"the submission left {' and '.join(integrity.torch_modes)} installed after its call: a mode sees"
            " every operation the harness makes and can compute outputs lazily, when they are inspected."))
    if integrity.l2_limit_bytes > 0:
        findings.append(_l2_finding(integrity.l2_limit_bytes))
    if integrity.extra_threads > 0:
        findings.append(Finding("background_threads", Severity.REVIEW,
            f"{integrity.extra_threads} thread(s) appeared during the calls (counted by the child)"))
    return findings


def _patch_findings(integrity: Integrity) -> list[Finding]:
    clocks = [n for n in integrity.replaced_functions if is_clock(n)]
    others = [n for n in integrity.replaced_functions if not is_clock(n)]
    if integrity.extensions.tampered:
        others.append("sys.setprofile (the harness's record of extension calls)")
    findings = []
    if clocks:
        findings.append(Finding("timer_patched", Severity.FLAG,
            "the submission replaced timing functions the harness relies on: " + _listed(clocks)))
    if others:
        findings.append(Finding("harness_patched", Severity.FLAG,
            "the submission replaced functions the harness relies on: " + _listed(others)))
    return findings


def _listed(names: list[str], most: int = 8) -> str:
    more = f" and {len(names) - most} more" if len(names) > most else ""
    return ", ".join(names[:most]) + more


def _l2_finding(limit: int) -> Finding:
    return Finding("l2_persistence", Severity.FLAG,
        f"the submission set aside {limit} bytes of L2 for persisting lines: data kept there survives the"
        " cache flush between timed calls (the harness reset it before timing and demoted the lines before"
        " every rep).")


def extension_findings(extensions: Extensions, uses_torch_ops: bool) -> list[Finding]:
    """Was the compiled kernel what computed the output? (docs/threats.md 16)"""
    if extensions.raised and not extensions.returned:
        return [Finding("kernel_failed_fallback", Severity.FLAG,
            f"{_listed(list(extensions.raised))} raised during forward() and the submission caught the exception"
            " and returned an output anyway: no function of its extensions ever completed, so a fallback, not"
            " the kernel, computed it.")]
    if extensions.raised:
        return [Finding("kernel_raised", Severity.REVIEW,
            f"{_listed(list(extensions.raised))} raised during forward() and the submission caught it; other"
            f" extension functions ({_listed(list(extensions.returned))}) did complete")]
    if not extensions.modules or extensions.called or uses_torch_ops:
        return []
    if extensions.called_at_load:
        return [Finding("extension_not_called_in_forward", Severity.REVIEW,
            f"the submission's extension functions ({_listed(list(extensions.called_at_load))}) ran only while"
            " loading, never in"
            " forward() (a captured CUDA graph replayed there, or a kernel that does not compute the output)")]
    return [Finding("extension_never_called", Severity.FLAG,
        f"the submission built {_listed(list(extensions.modules))} but never called any of its functions in"
        " any checked call: the output was computed by something else (PyTorch, most likely).")]


def process_findings(baseline: TreeCount | None, now: TreeCount | None, when: str) -> list[Finding]:
    """The judge's own /proc count of the child's tree against the count after loading."""
    if baseline is None or now is None:
        return []
    findings = []
    if now.processes > baseline.processes:
        findings.append(Finding("processes_appeared", Severity.REVIEW,
            f"{now.processes - baseline.processes} process(es) appeared in the child's tree {when}"
            " (seen by the judge in /proc): work in another process can finish after forward() returns"))
    if now.threads > baseline.threads:
        findings.append(Finding("threads_appeared", Severity.REVIEW,
            f"{now.threads - baseline.threads} thread(s) appeared in the child's tree {when} (seen by the judge"
            " in /proc): a thread pool of the submission's, or a thread finishing work after forward() returns"))
    return findings


def roofline_findings(median_ms: float, floor: RooflineFloor | None) -> list[Finding]:
    if floor is None or median_ms >= floor.floor_ms:
        return []
    return [Finding("below_roofline", Severity.FLAG,
        f"the candidate's median {median_ms:.4f} ms is below the roofline floor of {floor.floor_ms:.4f} ms"
        f" ({floor.device} peaks / {floor.safety:g}, compute basis {floor.basis}): no kernel can do this"
        " problem's FLOPs and memory traffic that fast, so the clock or the work is not what it seems.")]


def speedup_findings(speedup: float | None) -> list[Finding]:
    if speedup is not None and speedup > REVIEW_SPEEDUP:
        return [Finding("speedup_review", Severity.REVIEW,
                        f"speedup {speedup:.1f}x is above {REVIEW_SPEEDUP:g}x; marked for review")]
    return []
