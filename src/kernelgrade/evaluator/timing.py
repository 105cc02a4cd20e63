"""The timing protocol of docs/timing.md, shared by the judge (reference) and the run child (candidate).

Each rep: fresh input values (one of several input sets, chosen at random and scaled by a random factor
just below 1, so that no two reps see the same values and none can be predicted); a device synchronize; the
stream held (stream_hold.py: the device waits until the host has enqueued the whole rep); the cache flush
enqueued (persisting L2 lines demoted first) and the start event recorded behind it; forward; end event; the
hold released; the end event awaited, then a device-wide synchronize. The device runs flush, start, call and
end back to back, so the sample is device time however long the host took to dispatch forward(). The device
clock (CUDA events) is what is reported. Beside it each rep keeps its host-inclusive time (from the call until
the device is idle, less the flush) and how long the device stayed busy after the end event, which the judge
compares with the reference's to catch work hidden on other streams or threads, and counts the reps whose
device time may include host time: those the hold's watchdog had to release (forward() waited for the
device), or, where the stream is not held, whose call took the host longer to issue than the flush ran on
the device (the flush then no longer covers the dispatch).
Outputs are fingerprinted as each rep returns; a sample is kept so that the judge can re-check them and
the harness can see whether they changed afterwards.
"""

from __future__ import annotations

import math
import os
import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from kernelgrade.evaluator.compare import flatten_outputs
from kernelgrade.evaluator.integrity.l2 import PersistingL2
from kernelgrade.evaluator.integrity.tensor_checks import fingerprints
from kernelgrade.evaluator.request import TimingFlags, TimingParams
from kernelgrade.evaluator.result import TimingMethod, TimingStats
from kernelgrade.evaluator.stream_hold import HoldUnavailable, StreamHold
from kernelgrade.evaluator.wire.hold_page import HoldPage

MIB = 1024 * 1024

# Captured at import, before any submission code runs in this process, so that a submission replacing
# these attributes does not change the clock the harness reads.
_perf_counter_ns = time.perf_counter_ns
_cuda_synchronize = torch.cuda.synchronize
_Event = torch.cuda.Event
_event_elapsed = torch.cuda.Event.elapsed_time
_event_synchronize = torch.cuda.Event.synchronize
_current_stream = torch.cuda.current_stream
_os_pread = os.pread
_os_fstat = os.fstat
# Not predictable from inside the process (it reads the OS's entropy), unlike the `random` module's state.
_entropy = random.SystemRandom()

# Per-rep input scales are 1 - k / 2**15 for k in 1..SCALE_STEPS: exact in fp16 and fp32, at most 12.5 % off
# the problem's own distribution, and 4096 x (input sets) distinct value sets, so a cache keyed on input
# values almost never hits.
SCALE_STEPS = 4096
SCALE_UNIT = 2.0**-15
# Warm-up stops after this many calls whatever the clock says: at the default 25 ms of warm-up a kernel of
# 25 us reaches it, and a faster one needs no more.
WARMUP_CALL_CAP = 1000
# Besides the last output of each input set, this many timed outputs, drawn at random from all reps, are kept
# for the re-check, so a submission cannot tell which reps will be examined. Each costs the judge one
# reference run and the child one output held in memory; two is enough to catch a submission that cheats
# on most reps, and a cheat on few reps moves the median little.
SAMPLED_OUTPUTS = 2
CUDA_CLOCK = ("cuda_event (start recorded behind the enqueued flush, no synchronize before the call)"
              "+device_sync")
HELD = "held until the whole rep is enqueued (cuStreamWaitValue32 on a shared page the judge watches)"


@dataclass(frozen=True)
class RawSamples:
    device_ms: tuple[float, ...]
    # Host-inclusive time of each rep: from the call until the device is idle, less any flush still running.
    wall_ms: tuple[float, ...]
    stop_reason: str
    clock: str
    # Reps after which the clock this module reads was not the one captured at import: a submission that
    # rebinds it inside forward() and puts it back before the harness's between-operation checks.
    tampered_reps: int = 0
    # Reps whose call took the host longer to issue than the flush ran on the device (see the module's doc).
    host_bound_reps: int = 0
    # The flush's device time in each rep (start event minus an event before the flush); 0 on the CPU. Work
    # the call started on another stream while the flush ran stretches it (crosscheck.flush_corrected).
    flush_ms: tuple[float, ...] = ()
    # Whether the reps held the stream until enqueued, and why not where they did not (Holding.status).
    hold: str = ""
    # How long the device stayed busy after each rep's end event, as the host saw it (0 on the CPU): work the
    # call left on a stream nobody joined (crosscheck.timing_findings).
    tail_ms: tuple[float, ...] = ()
    # How long the timing thread waited for a CPU during each rep's host-inclusive time (0 on the CPU, and
    # where the kernel keeps no schedstat): the host's load, which the cross-checks take out of the wall gap.
    waited_ms: tuple[float, ...] = ()


@dataclass(frozen=True)
class Rep:
    """One timed call as the clock saw it."""

    device_ms: float
    wall_ms: float
    host_bound: bool
    out: Any
    flush_ms: float = 0.0
    # From the end event's completion until the device was idle (host clock). The caller's stream is done at
    # the end event, so anything still running then is work the call put on a stream it never joined. Unlike
    # the wall gap it holds no host dispatch time, and a held stream's stretched flush cannot absorb it.
    tail_ms: float = 0.0
    # From the call until the device was idle, the time the timing thread was ready to run but had no CPU
    # (Linux's run-queue delay): on a busy host it lengthens the host-inclusive time, and it is not the call's.
    waited_ms: float = 0.0


def default_flush_bytes(device: torch.device) -> int:
    if device.type == "cuda":
        l2 = int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0))
        return max(2 * l2, 256 * MIB)
    # A VM may report the whole host's last-level cache (260 MiB seen on a 2-core CI machine); sweeping twice
    # that before every rep would dominate the run, and 256 MiB already evicts any input of a CPU problem.
    return min(max(2 * _last_level_cache_bytes(), 64 * MIB), 256 * MIB)


def _last_level_cache_bytes() -> int:
    best = 0
    for index in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            text = (index / "size").read_text().strip()
        except OSError:
            continue
        scale = {"K": 1024, "M": MIB}.get(text[-1:], 1)
        digits = text.rstrip("KM")
        if digits.isdigit():
            best = max(best, int(digits) * scale)
    return best


class Flusher:
    """Evicts caches by writing a buffer larger than them; on a GPU, persisting L2 lines (which a flush does
    not evict) are first demoted to normal ones."""

    def __init__(self, device: torch.device, nbytes: int) -> None:
        self.nbytes = nbytes
        self._buffer = torch.empty(nbytes // 4, dtype=torch.int32, device=device)
        self._value = 0
        self._l2 = PersistingL2() if device.type == "cuda" else None
        self.flush()  # first touch of the pages happens here, not inside the first timed rep's overhead

    def flush(self) -> None:
        if self._l2 is not None:
            self._l2.demote_lines()
        self._value = (self._value + 1) & 0xFFFF
        self._buffer.fill_(self._value)


def device_synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        _cuda_synchronize(device)


def clone_inputs(inputs: Sequence[Any]) -> list[Any]:
    return [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]


def scalable(value: Any) -> bool:
    """Floating tensors whose values are not all whole numbers: masks, labels and counts stored as floats
    keep their values, since scaling would change what they mean. The first elements are looked at first: a
    random input shows a fraction at once, where the whole check of a 1 GiB tensor took 1.3 s on a CPU."""
    if not isinstance(value, torch.Tensor) or not value.is_floating_point() or value.numel() == 0:
        return False
    if value.is_contiguous():
        head = value.view(-1)[:SCALABLE_HEAD]
        if not torch.equal(head, torch.trunc(head)):
            return True
    return not bool(torch.equal(value, torch.trunc(value)))


# Elements scalable() looks at before the whole tensor: a few microseconds of work on any device.
SCALABLE_HEAD = 4096


def scale_factor(step: int) -> float:
    return 1.0 - step * SCALE_UNIT


def scaled_inputs(values: Sequence[Any], step: int, which: Sequence[bool]) -> list[Any]:
    """Fresh copies of `values`, the scalable ones multiplied by scale_factor(step). The judge repeats this
    on its own copy of the set to get the inputs of a re-checked rep, bit for bit."""
    factor = scale_factor(step)
    return [v * factor if flag and step else (v.clone() if isinstance(v, torch.Tensor) else v)
            for v, flag in zip(values, which, strict=True)]


Tag = tuple[int, int]  # (input set, scale step) of one timed rep


class InputRotation:
    """Fresh input values for every rep, drawn from the OS's entropy so they cannot be predicted."""

    def __init__(self, input_sets: Sequence[Sequence[Any]]) -> None:
        self.sets = [list(s) for s in input_sets]
        self.which = [[scalable(v) for v in s] for s in self.sets]

    def draw(self) -> tuple[list[Any], Tag]:
        index = _entropy.randrange(len(self.sets))
        step = _entropy.randint(1, SCALE_STEPS)
        return scaled_inputs(self.sets[index], step, self.which[index]), (index, step)


@dataclass(frozen=True)
class KeptOutput:
    tag: Tag
    rep: int
    outputs: list[Any]
    at_return: list[int]  # fingerprints when the rep ended (after its device-wide synchronize)


class OutputKeeper:
    """Fingerprints every timed output and keeps the last one of each input set plus a random sample.
    The judge's reference loop uses one too, so both sides pay the same per-rep cost."""

    def __init__(self, sampled: int = SAMPLED_OUTPUTS, retain: bool = True) -> None:
        """`retain=False`: every output is fingerprinted, at the same per-rep cost, and none is kept (the
        reference's child, whose outputs nothing re-checks: on a problem with 7 GiB outputs, keeping them took
        35 GiB of the device beside the candidate's child)."""
        self._last: dict[int, KeptOutput] = {}
        self._sample: list[KeptOutput] = []
        self._capacity = sampled
        self._seen = 0
        self._retain = retain
        self._base = self._reps = 0  # rep numbers of a resumed phase follow those of the rounds before

    def keep(self, rep: int, tag: Tag, out: Any) -> None:
        outputs = flatten_outputs(out)
        rep += self._base
        self._reps = max(self._reps, rep + 1)
        entry = KeptOutput(tag, rep, outputs, fingerprints(outputs))
        if not self._retain:
            return
        self._last[tag[0]] = entry
        self._seen += 1
        if len(self._sample) < self._capacity:
            self._sample.append(entry)
        elif (slot := _entropy.randrange(self._seen)) < self._capacity:  # reservoir sampling
            self._sample[slot] = entry

    def resumed(self) -> OutputKeeper:
        """This keeper for the next round of an interleaved phase (judge/interleaved.py): its sample is drawn
        from every round's reps, numbered on from the last round's."""
        self._base = self._reps
        return self

    def kept(self) -> list[KeptOutput]:
        unique = {e.rep: e for e in [*self._sample, *self._last.values()]}
        return [unique[r] for r in sorted(unique)]


_holds: dict[int, StreamHold | str] = {}


def device_hold(device: torch.device, page: HoldPage | None = None) -> tuple[StreamHold | None, str]:
    """This process's stream hold for a GPU, made on the first call with the page it waits on (a run child's
    page is the one its judge made and watches; wire/hold_page.py); None and why where there is none: no page
    that something outside this thread can release, or a driver that cannot hold a stream."""
    index = device.index if device.index is not None else torch.cuda.current_device()
    found = _holds.get(index)
    if found is None:
        found = _new_hold(page) if page is not None else "no hold page that the judge watches"
        _holds[index] = found
    return (found, "") if isinstance(found, StreamHold) else (None, found)


def _new_hold(page: HoldPage) -> StreamHold | str:
    try:
        return StreamHold(page)
    except HoldUnavailable as exc:
        return str(exc)


class Holding:
    """Whether one timed phase holds the stream until each rep is enqueued, and why not where it does not. A
    rep the watchdog had to release stops holding for the rest of the phase: its forward() waits for the
    device, and every held rep would cost the watchdog's delay."""

    def __init__(self, hold: StreamHold | None, status: str) -> None:
        self.hold = hold
        self.status = status

    @classmethod
    def for_device(cls, device: torch.device, wanted: bool) -> Holding:
        if device.type != "cuda":
            return cls(None, "not applicable (CPU)")
        if not wanted:
            return cls(None, "off (timing parameters)")
        hold, why = device_hold(device)
        return cls(hold, HELD) if hold is not None else cls(None, f"unavailable: {why}")

    def stop(self, why: str) -> None:
        self.hold = None
        self.status = f"off: {why}"


class _Clock:
    """One rep's device and host-inclusive time: CUDA events on a GPU, the wall clock on the CPU."""

    def __init__(self, device: torch.device, holding: Holding | None = None, waits: bool = False) -> None:
        self.device = device
        self.cuda = device.type == "cuda"
        self.holding = holding  # the phase's stream hold; the clock's own, so run() keeps its plain signature
        # The timing thread's own schedstat, opened once: a read is a microsecond, outside the rep's windows.
        # Only timed reps need their waits; a clock without one reads 0.
        self._schedstat = _open_schedstat() if self.cuda and waits else None
        self._schedstat_id = _os_fstat(self._schedstat)[1:3] if self._schedstat is not None else ()

    def close(self) -> bool:
        """Closes the schedstat; whether it was still the file opened (not another put in its place)."""
        if self._schedstat is None:
            return True
        try:
            return _os_fstat(self._schedstat)[1:3] == self._schedstat_id
        finally:
            os.close(self._schedstat)
            self._schedstat = None

    def run(self, fn: Callable[..., Any], args: list[Any], flusher: Flusher | None = None) -> Rep:
        if not self.cuda:
            if flusher is not None:
                flusher.flush()
            t0 = _perf_counter_ns()
            out = fn(*args)
            wall = (_perf_counter_ns() - t0) / 1e6
            return Rep(wall, wall, False, out)
        holding = self.holding
        hold = holding.hold if holding is not None else None
        before = _Event(enable_timing=True)  # type: ignore[no-untyped-call]
        start = _Event(enable_timing=True)  # type: ignore[no-untyped-call]
        end = _Event(enable_timing=True)  # type: ignore[no-untyped-call]
        # Idle before the rep (its fresh input values are written by then). Held, the device starts the rep
        # only once all of it is enqueued; not held, the host clock and the device's flush start together and
        # the flush covers the host's dispatch of the call, as long as the host is quick enough.
        _cuda_synchronize(self.device)
        if hold is not None and holding is not None:
            try:
                hold.hold(_current_stream(self.device).cuda_stream)
            except HoldUnavailable as exc:
                holding.stop(str(exc))
                hold = None
        enqueued = _perf_counter_ns()
        before.record()
        if flusher is not None:
            flusher.flush()
        start.record()
        waited = _waited_ns(self._schedstat)
        called = _perf_counter_ns()
        try:
            out = fn(*args)
            end.record()
        finally:
            released = hold.release() if hold is not None else None
        issued = _perf_counter_ns()
        _event_synchronize(end)
        ended = _perf_counter_ns()
        _cuda_synchronize(self.device)
        idle = _perf_counter_ns()
        waited_ms = (_waited_ns(self._schedstat) - waited) / 1e6
        flush_ms = float(_event_elapsed(before, start))
        device_ms = float(_event_elapsed(start, end))
        tail_ms = (idle - ended) / 1e6
        if released is not None:
            if not released.released_by_host and holding is not None:
                holding.stop("forward() waited for the device while the stream was held")
            # Nothing of the rep ran before the release: the flush ran after it, then the call.
            wall = (idle - called) / 1e6 - flush_ms
            return Rep(device_ms, wall, not released.released_by_host, out, flush_ms, tail_ms, waited_ms)
        # The device ran the flush from about `enqueued` on; the call's host-inclusive time starts when both
        # the call has begun and the flush is done, as in a protocol that synchronizes before calling.
        began = max(called, enqueued + int(flush_ms * 1e6))
        return Rep(device_ms, (idle - began) / 1e6, (issued - called) / 1e6 > flush_ms, out, flush_ms, tail_ms,
                   waited_ms)


def _open_schedstat() -> int | None:
    """The calling thread's schedstat (Linux), or None where the kernel keeps none."""
    try:
        return os.open("/proc/thread-self/schedstat", os.O_RDONLY)
    except OSError:
        return None


def _waited_ns(schedstat: int | None) -> int:
    """The thread's run-queue delay so far (schedstat's second field), 0 where it cannot be read."""
    if schedstat is None:
        return 0
    try:
        return int(_os_pread(schedstat, 96, 0).split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def _rotation(inputs: InputRotation | Sequence[Sequence[Any]]) -> InputRotation:
    return inputs if isinstance(inputs, InputRotation) else InputRotation(inputs)


def warm_up(fn: Callable[..., Any], input_sets: InputRotation | Sequence[Sequence[Any]], device: torch.device,
            params: TimingParams, keeper: OutputKeeper | None = None, holding: Holding | None = None) -> int:
    """Call fn until at least `warmup_calls` calls and `warmup_ms` of time have passed; return the count.
    Warm-up reps look like timed ones (fresh values, a keeper holding outputs, the stream held after the
    first call, which may set up lazily what waits for the device), so the allocator's cache already has the
    blocks the timed reps will ask for, and a forward() that waits for the device stops the holding here,
    before any timed rep."""
    first, held = _Clock(device), _Clock(device, holding)
    rotation, intact = _rotation(input_sets), clock_intact
    calls, spent = 0, 0.0
    while calls < params.warmup_calls or spent < params.warmup_ms:
        args, tag = rotation.draw()
        rep = (held if calls else first).run(fn, args)
        if keeper is not None:
            keeper.keep(calls, tag, rep.out)
        spent += rep.wall_ms
        del rep, args
        calls += 1
        # A rebound clock can claim no time passes; warming on would never end (the rebinding is flagged).
        if calls >= WARMUP_CALL_CAP or not intact():
            break
    return calls


def measure(
    fn: Callable[..., Any],
    input_sets: InputRotation | Sequence[Sequence[Any]],
    device: torch.device,
    params: TimingParams,
    flusher: Flusher,
    keeper: OutputKeeper | None = None,
    holding: Holding | None = None,
) -> RawSamples:
    """Time fn on fresh input values until the mean and median are precise enough or a cap is reached."""
    clock, rotation, intact = _Clock(device, holding, waits=True), _rotation(input_sets), clock_intact
    device_ms: list[float] = []
    wall_ms: list[float] = []
    flush_ms: list[float] = []
    tail_ms: list[float] = []
    waited_ms: list[float] = []
    began = _perf_counter_ns()
    reason, tampered, host_bound = "max_reps", 0, 0
    try:
        for index in range(params.max_reps):
            args, tag = rotation.draw()
            rep = clock.run(fn, args, flusher)
            tampered += not intact()
            host_bound += rep.host_bound
            device_ms.append(rep.device_ms)
            wall_ms.append(rep.wall_ms)
            flush_ms.append(rep.flush_ms)
            tail_ms.append(rep.tail_ms)
            waited_ms.append(rep.waited_ms)
            if keeper is not None:
                keeper.keep(index, tag, rep.out)
            del rep, args
            stop = _stop_reason(device_ms, params, (_perf_counter_ns() - began) / 1e6)
            if stop:
                reason = stop
                break
    finally:
        if not clock.close():  # another file in the schedstat's place: its waits are not the thread's
            waited_ms = [0.0] * len(waited_ms)
    return RawSamples(tuple(device_ms), tuple(wall_ms), reason, "cuda_event" if clock.cuda else "perf_counter_ns",
                      tampered, host_bound, tuple(flush_ms), holding.status if holding is not None else "",
                      tuple(tail_ms), tuple(waited_ms))


_CLOCK_GLOBALS = {name: globals()[name] for name in ("_perf_counter_ns", "_cuda_synchronize", "_Event",
                                                     "_event_elapsed", "_event_synchronize", "_current_stream",
                                                     "device_synchronize", "_os_pread", "_os_fstat",
                                                     "_waited_ns", "_open_schedstat")}
_CLOCK_METHODS: dict[str, tuple[Any, Any]] = {name: (vars(_Clock)[name], vars(_Clock)[name].__code__)
                                               for name in ("run", "__init__", "close")}


def clock_intact() -> bool:
    """Whether the names a rep's clock is read through are still the objects captured at import."""
    module, methods = globals(), vars(_Clock)
    return (all(module.get(name) is value for name, value in _CLOCK_GLOBALS.items())
            and all(methods.get(name) is function and getattr(function, "__code__", None) is code
                    for name, (function, code) in _CLOCK_METHODS.items()))


def _stop_reason(samples: list[float], params: TimingParams, wall_ms: float) -> str:
    n = len(samples)
    if n >= params.min_reps and median_ci_halfwidth(samples) <= params.target_median_ci:
        return "target_precision"
    if n >= 2 and sum(samples) >= params.max_device_ms:
        return "max_device_time"
    if n >= 2 and wall_ms >= params.max_wall_ms:
        return "max_wall_time"
    return ""


def median_ci_halfwidth(samples: Sequence[float]) -> float:
    """The larger side of the median's 95 % confidence interval, relative to the median."""
    ordered = sorted(samples)
    median = statistics.median(ordered)
    if median <= 0:
        return math.inf
    low, high = median_ci_indices(len(ordered))
    return max(median - ordered[low], ordered[high] - median) / median


def summarize(samples: Sequence[float], stop_reason: str, host_ms: Sequence[float] = (),
              host_bound_reps: int = 0) -> TimingStats:
    """Median, mean, spread, and a distribution-free 95% confidence interval of the median; beside them the
    median host-inclusive time and how many reps may hold host time."""
    ordered = sorted(samples)
    n = len(ordered)
    low, high = median_ci_indices(n)
    return TimingStats(
        n=n,
        median_ms=statistics.median(ordered),
        mean_ms=statistics.fmean(ordered),
        std_ms=statistics.stdev(ordered) if n > 1 else 0.0,
        min_ms=ordered[0],
        max_ms=ordered[-1],
        ci95_low_ms=ordered[low],
        ci95_high_ms=ordered[high],
        stop_reason=stop_reason,
        samples_ms=tuple(samples),
        host_median_ms=statistics.median(host_ms) if host_ms else None,
        host_bound_reps=host_bound_reps,
    )


def median_ci_indices(n: int) -> tuple[int, int]:
    """Order-statistic indices bracketing the median with about 95% confidence (normal approximation
    to the binomial); the whole range for small n."""
    half = 1.96 * math.sqrt(n) / 2
    low = max(0, math.floor(n / 2 - half))
    high = min(n - 1, math.ceil(n / 2 + half) - 1)
    return low, max(low, high)


def method_record(params: TimingParams, flush_bytes: int, device: torch.device, l2_status: str,
                  stream_hold: str = "") -> TimingMethod:
    """How timings were taken, for the record beside the numbers."""
    return TimingMethod(
        clock=CUDA_CLOCK if device.type == "cuda" else "perf_counter_ns",
        flush_bytes=flush_bytes, warmup_calls=params.warmup_calls, warmup_ms=params.warmup_ms,
        min_reps=params.min_reps, max_reps=params.max_reps,
        target_median_ci=params.target_median_ci,
        max_device_ms=params.max_device_ms, max_wall_ms=params.max_wall_ms, input_sets=params.input_sets,
        l2_persisting=l2_status or ("not applicable (CPU)" if device.type != "cuda" else "unknown"),
        precision_flags=TimingFlags(params.flags).described, stream_hold=stream_hold,
    )
