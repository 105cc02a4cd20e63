"""The run child: loads the built submission, runs forward() on the judge's inputs, times it.

Untrusted code runs in this process, so everything it reports is a claim the judge cross-checks.
Run as `python -m kernelgrade.evaluator.child.run_child`; requests arrive as JSON lines
(wire/protocol.py).
"""

from __future__ import annotations

import functools
import os
import sys
import time
import traceback
import types
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import torch

# Imported before the judge hears `ready`: a submission's load_inline needs it, and its import (0.56 s on an
# H100 host, setuptools included) would otherwise fall in the load stage, with the device held.
from torch.utils import cpp_extension

from kernelgrade.evaluator import timing
from kernelgrade.evaluator.child.channel import ChildChannel
from kernelgrade.evaluator.compare import OutputMeta, flatten_outputs
from kernelgrade.evaluator.cpu_threads import fit_to_affinity
from kernelgrade.evaluator.device_cache import leave_room
from kernelgrade.evaluator.device_draws import weights_device, weights_drawn
from kernelgrade.evaluator.integrity import precision_flags
from kernelgrade.evaluator.integrity.guard import Guard
from kernelgrade.evaluator.integrity.l2 import PersistingL2
from kernelgrade.evaluator.integrity.tensor_checks import active_modes, fingerprints, inert, why_not_plain
from kernelgrade.evaluator.integrity.threads import os_threads, thread_ids, wait_quiet
from kernelgrade.evaluator.source_module import import_submission
from kernelgrade.evaluator.wire import protocol, tensorfile
from kernelgrade.evaluator.wire.hold_page import PAGE_NAME, HoldPage
from kernelgrade.evaluator.wire.prebuilt import Prebuilt, importing
from kernelgrade.evaluator.wire.protocol import (
    CallRequest,
    ExitRequest,
    LoadRequest,
    Op,
    ReadSetsRequest,
    ReadyRequest,
    Refusal,
    RefusalKind,
    Request,
    TimedOutputsRequest,
    TimeRequest,
    WarmRequest,
    WarmupRequest,
)
from kernelgrade.evaluator.wire.replies import (
    CallReply,
    Done,
    Extensions,
    Integrity,
    L2Reset,
    Loaded,
    TimedOutputsReply,
    TimeReply,
    WarmupReply,
)
from kernelgrade.evaluator.wire.shared_region import SharedRegion, aligned

# Captured before the submission is imported (see timing.py for the same precaution).
_Tensor = torch.Tensor
_equal = torch.equal
_perf_counter = time.perf_counter
_sleep = time.sleep
_stat = os.stat
_setprofile = sys.setprofile
_getprofile = sys.getprofile

# A file as read: its path, inode, size, modification and change times (ns).
FileStamp = tuple[str, int, int, int, int]

# After these the judge uses the device (compares outputs, times the reference) while this child waits: the
# cache the call or the timed reps left is handed back so that the judge has room (device_cache.py). Not after
# WARMUP: the timed reps that follow would pay for getting it again.
HANDS_BACK_CACHE = frozenset({Op.CALL, Op.TIME, Op.TIMED_OUTPUTS})
# A call's output is fingerprinted when forward() returns and again after a device-wide synchronize and a
# settle (the judge sends twice the reference's own time). The settle is clamped here too, since the command
# is the only thing bounding it: 2 ms lets a background thread be scheduled even when the reference takes
# microseconds; 1 s keeps a slow reference from stretching every checked call.
MIN_SETTLE_S = 0.002
MAX_SETTLE_S = 1.0
# After the settle, the wait for threads that appeared since load to go quiet (integrity/threads.py). A runnable
# thread gets a CPU within a few scheduler periods (tens of ms) even on a loaded host; 1 s leaves room for far
# worse, and a thread that never rests costs each checked call no more than that.
QUIET_BUDGET_S = 1.0


class SubmissionFailed(Exception):
    """The submission raised; carries the formatted traceback."""


@dataclass(frozen=True)
class TimingState:
    """What the timed reps rely on besides code (Harness._timing_state)."""

    sets: tuple[Any, ...]  # the input sets' identities and bits
    # The flush buffer's and the harness objects' instance attributes; empty where the sets were read ahead of
    # the warm-up that makes the flush buffer.
    harness: tuple[Any, ...] = ()


def output_meta(value: Any) -> OutputMeta:
    problem = why_not_plain(value) if isinstance(value, _Tensor) else "not a tensor"
    plain = problem == ""
    return OutputMeta(type_name=type(value).__name__, is_plain_tensor=plain,
                      device=str(value.device) if plain else "",
                      dtype=tensorfile.dtype_name(value.dtype) if plain else "",
                      shape=tuple(int(d) for d in value.shape) if plain else (),
                      why_not_plain=problem if isinstance(value, _Tensor) else "")


class ExtensionWatch:
    """Which functions of the submission's compiled extensions ran, and which raised (docs/threats.md 16).

    The harness wraps torch's load_inline and load before the submission is imported, so it knows the
    extension modules they return (torch does not put them in sys.modules). A profile hook sees every call
    of a C function from Python, pybind11 extension functions included, while loading and during the checked
    calls (never the timed ones).
    """

    def __init__(self) -> None:
        self.built: list[types.ModuleType] = []
        self.called: set[tuple[str, str]] = set()
        self.returned: set[tuple[str, str]] = set()
        self.raised: set[tuple[str, str]] = set()
        self.called_at_load: set[tuple[str, str]] = set()
        self.tampered = False
        self._installed = self._hook  # one bound method, so that the identity check below means something

    def install(self, prebuilt: tuple[Prebuilt, ...], prebuilt_dir: Path) -> None:
        """load_inline answers the compile child's recorded builds by importing their libraries."""
        cpp_extension.load_inline = self._recording(importing(prebuilt, prebuilt_dir, cpp_extension.load_inline))
        cpp_extension.load = self._recording(cpp_extension.load)

    def _recording(self, build: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(build)
        def recording(*args: Any, **kwargs: Any) -> Any:
            module = build(*args, **kwargs)
            if isinstance(module, types.ModuleType):
                self.built.append(module)
            return module

        return recording

    def loaded(self) -> None:
        """What ran while loading is kept apart from what runs in forward()."""
        self.called_at_load, self.called = self.called, set()
        self.returned.clear()
        self.raised.clear()

    def _hook(self, frame: FrameType, event: str, arg: Any) -> None:
        record = {"c_call": self.called, "c_return": self.returned, "c_exception": self.raised}.get(event)
        if record is not None:
            record.add((str(getattr(arg, "__module__", "") or ""), str(getattr(arg, "__name__", ""))))

    @contextmanager
    def watching(self) -> Iterator[None]:
        _setprofile(self._installed)
        try:
            yield
        finally:
            self.tampered |= _getprofile() is not self._installed
            _setprofile(None)

    def modules(self) -> list[str]:
        """Built extension modules that export at least one function of their own (one that only registers
        torch.ops operators has nothing to call from Python)."""
        found = {m.__name__ for m in self.built
                 if any(callable(v) and getattr(v, "__module__", None) == m.__name__ for v in vars(m).values())}
        return sorted(found)

    def report(self) -> Extensions:
        names = set(self.modules())

        def listed(calls: set[tuple[str, str]]) -> tuple[str, ...]:
            return tuple(sorted(f"{m}.{f}" for m, f in calls if m in names))

        return Extensions(modules=tuple(sorted(names)), called=listed(self.called), raised=listed(self.raised),
                          called_at_load=listed(self.called_at_load), tampered=self.tampered,
                          returned=listed(self.returned))


class Harness:
    def __init__(self) -> None:
        self.model: Any = None
        self.device = torch.device("cpu")
        self.warmed = False
        self.flags_before: dict[str, str] = {}
        self.threads_at_load: frozenset[str] = frozenset()
        self.guard: Guard | None = None
        self.l2: PersistingL2 | None = None
        # The persisting-L2 set-aside the harness expects: the driver's default until the harness resets it
        # to 0 (an H200's context starts with 11.8 MB set aside); any other value is the submission's doing.
        self.l2_expected = 0
        self.l2_state = L2Reset()
        self.extensions = ExtensionWatch()
        self.rotation: timing.InputRotation | None = None
        self.set_files: tuple[FileStamp, ...] | None = None  # the rotation's sets' files
        self.flusher: timing.Flusher | None = None
        self.holding: timing.Holding | None = None
        self.keeper: timing.OutputKeeper | None = None
        self.region: SharedRegion | None = None  # the judge's region for outputs (wire/shared_region.py)
        self.settle_s = MIN_SETTLE_S
        self.timing_state: TimingState | None = None
        self.tampered_state: list[str] = []
        # Whether a warm-up keeps sets read from the same files (warmup()): on a GPU only. On the CPU the
        # reference's loop is the yardstick for the candidate's loop overhead, and sets read afresh are fresh
        # host memory whose state shows in that loop; the candidate's child always reads them afresh. With
        # the reference's sets kept, two CI runs on a 2-core host each flagged one honest CPU kernel
        # `timing_inconsistent`.
        self.keeps_sets = False

    def handle(self, request: Request[Any] | Refusal) -> tuple[object, float]:
        """The request's reply, or a Refusal, and the seconds it took. `request` is a Refusal already where the
        protocol could not read it."""
        if isinstance(request, Refusal):
            return request, 0.0
        # Each handler takes its op's request type and returns that request's reply type. Made per request from
        # the class's methods, which the guard watches (a table kept on the instance could be edited unseen).
        handlers: dict[Op, Callable[[Any], object]] = {
            Op.READY: self.ready, Op.WARM: self.warm, Op.LOAD: self.load, Op.CALL: self.call,
            Op.READ_SETS: self.read_sets, Op.WARMUP: self.warmup, Op.TIME: self.time,
            Op.TIMED_OUTPUTS: self.timed_outputs}
        handler = handlers.get(request.OP)
        if handler is None:
            return Refusal(RefusalKind.PROTOCOL, f"unknown op {request.OP.value!r}"), 0.0
        started = _perf_counter()
        try:
            reply = handler(request)
        except SubmissionFailed as exc:
            return Refusal(RefusalKind.SUBMISSION, str(exc)), 0.0
        elapsed = _perf_counter() - started
        if request.OP in HANDS_BACK_CACHE:
            leave_room(self.device)
        return reply, elapsed

    def _run_submission(self, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except BaseException as exc:  # SystemExit and KeyboardInterrupt from submission code included
            raise SubmissionFailed(_format_exception(exc)) from None

    def ready(self, _request: ReadyRequest) -> Done:
        """Torch is imported (before the command loop): the judge learns the child is up without it touching
        the device, so that a judge that is measuring can hold the device warm-up back."""
        return Done()

    def warm(self, request: WarmRequest) -> Done:
        """Everything before the submission that takes time: torch's device context and library handles. A
        warm child waits here, so that only loading the submission is left when its turn comes."""
        self.device = torch.device(request.device)
        precision_flags.set_strict()
        torch.set_grad_enabled(False)
        _prewarm(self.device)
        if self.device.type == "cuda":
            # Registered before the submission exists: the page its judge made and watches (wire/hold_page.py).
            timing.device_hold(self.device, HoldPage.open(Path(PAGE_NAME)))
        self.keeps_sets = self.device.type == "cuda"
        self.warmed = True
        return Done()

    def load(self, request: LoadRequest) -> Loaded:
        if not self.warmed or torch.device(request.device) != self.device:
            self.warm(WarmRequest(request.device))
        self.flags_before = precision_flags.snapshot()
        self.l2 = PersistingL2() if self.device.type == "cuda" else None
        self.l2_expected = self.l2.limit() if self.l2 else 0
        # The judge has placed this child on its job's cores by now, after it warmed up elsewhere.
        fit_to_affinity()
        self.extensions.install(request.prebuilt, request.prebuilt_dir)
        if request.region_fd >= 0:
            self.region = SharedRegion.attach(request.region_fd, pin=self.device.type == "cuda")
        self.guard = Guard.take()
        with self.extensions.watching():
            module = self._run_submission(import_submission, request.submission)
            if not hasattr(module, "ModelNew"):
                raise SubmissionFailed("the module defines no ModelNew after import")
            init_inputs = tensorfile.load(request.init_inputs)
            torch.manual_seed(request.seed)
            # Large weights drawn on the device, as the judge constructs Model (device_draws.py).
            with weights_drawn(weights_device(self.device), request.seed):
                model = self._run_submission(module.ModelNew, *init_inputs)
            self.model = self._run_submission(model.to, self.device)
        self.extensions.loaded()
        self._synchronize()
        self.threads_at_load = thread_ids()
        return Loaded(self._integrity(), shared_region=self.region is not None)

    def _inputs(self, path: Path) -> list[Any]:
        with inert():
            return tensorfile.load(path, self.device)

    def call(self, request: CallRequest) -> CallReply:
        inputs = self._call_inputs(request)
        with inert():
            given = timing.clone_inputs(inputs)
            _poison(self.device, request.poison_bytes)
        self._synchronize()
        with self.extensions.watching():
            out = self._run_submission(self.model, *given)
        outputs = flatten_outputs(out)
        at_return = fingerprints(outputs)  # before any synchronize: work still running shows up as a change
        self._settle(request.settle_s)
        after = fingerprints(outputs)
        with inert():
            mutated = [i for i, (a, b) in enumerate(zip(inputs, given, strict=True))
                       if isinstance(a, _Tensor) and not (type(b) is _Tensor and _equal(a, b))]
            metas = tuple(output_meta(v) for v in outputs)
            in_region = self._save_outputs(request, [v if m.is_plain_tensor else None
                                                     for v, m in zip(outputs, metas, strict=True)])
            # Once more after the save: work that wakes late (a process descheduled through the settle wait on
            # a busy host) and writes while the file is written would otherwise pass as a wrong output.
            saved = fingerprints(outputs)
        return CallReply(outputs=metas, mutated_inputs=tuple(mutated),
                         changed_after_return=not at_return == after == saved, integrity=self._integrity(),
                         input_fingerprints=tuple(fingerprints(given)), region_bytes=in_region)

    def _call_inputs(self, request: CallRequest) -> list[Any]:
        """The inputs from the judge's region where the request says they are there, else from its file."""
        if not request.inputs_bytes:
            return self._inputs(request.inputs)
        # Mapped whole at once, with the room the outputs are offered after the inputs: a mapping grown for them
        # afterwards would register the region with CUDA a second time.
        view = self._region_view(max(request.inputs_bytes, request.region_bytes))
        if view is None:
            raise RuntimeError(f"the request puts {request.inputs_bytes} bytes of inputs in a shared region this child"
                               " has not mapped")
        with inert():
            return tensorfile.load_from_memory(view[:request.inputs_bytes], self.device)

    def _save_outputs(self, request: CallRequest, values: list[Any]) -> int:
        """Write the outputs into the judge's region, after the inputs, where they fit in what the request offers
        there (where they end), else to the request's file (0)."""
        start = aligned(request.inputs_bytes)
        view = self._region_view(request.region_bytes)
        written = tensorfile.save_to_memory(view[start:], values) if view is not None and start <= len(view) else None
        if written is None:
            tensorfile.save(request.outputs, values)
            return 0
        return start + written

    def _settle(self, seconds: float) -> None:
        """Device-wide synchronize, wait, let the threads that appeared since load go quiet, synchronize again:
        a thread that writes late has had its chance."""
        self._synchronize()
        _sleep(min(max(seconds, MIN_SETTLE_S), MAX_SETTLE_S))
        wait_quiet(self.threads_at_load, QUIET_BUDGET_S)
        self._synchronize()

    def _synchronize(self) -> None:
        try:
            timing.device_synchronize(self.device)
        except BaseException as exc:  # an asynchronous CUDA error surfaces here
            raise SubmissionFailed(_format_exception(exc)) from None

    def read_sets(self, request: ReadSetsRequest) -> Done:
        """The sets read ahead of the warm-up on the same files, which keeps them (warmup())."""
        self.flusher = self.keeper = None
        if self._sets_read_from(request.input_sets) is None:
            self._read_sets(request.input_sets)
            self.timing_state = TimingState(self._sets_state())
        return Done()

    def warmup(self, request: WarmupRequest) -> WarmupReply:
        # Sets, flush buffer and L2 reset are ready before `time`, so the judge's clock around that phase
        # covers only the reps. On a GPU (keeps_sets) the reference's child reads the sets ahead, and runs a
        # warm-up before and one after the candidate, on the same set files: where the files are the ones read
        # and the sets are as they were, the sets are kept rather than read again (every set copied through a
        # file and onto the device, a few hundred MB on a 4096x4096 matmul). Otherwise the earlier sets and kept
        # outputs are let go of before the read: held through it, they took 49 GiB of an H200 on a problem with
        # 7 GiB inputs.
        earlier = self._sets_read_from(request.input_sets)
        self.flusher = self.keeper = None
        if earlier is None:
            self._read_sets(request.input_sets)
        self.flusher = timing.Flusher(self.device, request.flush_bytes)
        self.timing_state = self._timing_state()
        if earlier is not None and self.timing_state.sets != earlier:  # changed in memory since: read again
            self._read_sets(request.input_sets)
            self.timing_state = self._timing_state()
        params = request.params
        # The problem may ask to be timed under PyTorch's default switches; from here on those are the
        # harness's own, and only a change from them is the submission's.
        precision_flags.apply(params.flags)
        self.flags_before = precision_flags.snapshot()
        self.settle_s = request.settle_s
        keeper = timing.OutputKeeper()
        self.holding = timing.Holding.for_device(self.device, params.hold_stream)
        calls = self._run_submission(timing.warm_up, self.model, self.rotation, self.device, params, keeper,
                                     self.holding)
        del keeper
        self.l2_state = self._reset_l2()
        self._check_timing_state()
        return WarmupReply(calls=calls, integrity=self._integrity())

    def _sets_read_from(self, paths: Sequence[Path]) -> tuple[Any, ...] | None:
        """The held sets' state at the last warm-up or read, where they were read from these very files (same
        inode, size, modification and change times) and no check has seen the timing state change since; None
        where the files must be read. Comparing the sets with that state costs no extra pass over them: warmup()
        fingerprints them anyway."""
        if not self.keeps_sets or self.rotation is None or self.timing_state is None or self.tampered_state:
            return None
        stamps = _stamps(paths)
        return self.timing_state.sets if stamps is not None and stamps == self.set_files else None

    def _read_sets(self, paths: Sequence[Path]) -> None:
        self.rotation = None
        self.rotation = timing.InputRotation([self._inputs(p) for p in paths])
        self.set_files = _stamps(paths)

    def _timing_state(self) -> TimingState:
        """What the timed reps rely on besides code: the objects that supply inputs and flush caches, their
        instance attributes, and the input sets' bits. A submission that zeroes the sets, swaps the flush
        buffer for a small one or shadows a method on an instance changes this."""
        assert self.rotation is not None and self.flusher is not None
        flusher, rotation = self.flusher, self.rotation
        buffer = flusher._buffer
        return TimingState(self._sets_state(), (id(flusher._l2), id(buffer), buffer.data_ptr(), buffer.numel(),
                                                flusher.nbytes, tuple(_shadowed(o) for o in (self, flusher, rotation))))

    def _sets_state(self) -> tuple[Any, ...]:
        assert self.rotation is not None
        sets = self.rotation.sets
        return id(sets), tuple(map(id, sets)), tuple(tuple(fingerprints(s)) for s in sets)

    def _check_timing_state(self) -> None:
        if self.timing_state is not None and self._timing_state() != self.timing_state:
            self.tampered_state = ["the harness's timing state (input sets, flush buffer or instance methods)"]

    def _reset_l2(self) -> L2Reset:
        if self.l2 is None:
            return L2Reset("not applicable (CPU)")
        self._synchronize()
        state = self.l2.reset(0, torch.cuda.current_stream(self.device).cuda_stream)
        changed = state.limit_bytes if state.limit_bytes != self.l2_expected else 0
        if state.status == "reset":
            self.l2_expected = 0
        return L2Reset(state.status, changed, state.window_bytes)

    def time(self, request: TimeRequest) -> TimeReply:
        assert self.rotation is not None and self.flusher is not None, "warmup must come first"
        params = request.params
        if request.resumes and self.keeper is not None:
            keeper = self.keeper.resumed()
        else:
            keeper = timing.OutputKeeper(retain=request.keep_outputs)
        raw = self._run_submission(timing.measure, self.model, self.rotation, self.device, params, self.flusher,
                                   keeper, self.holding)
        self._synchronize()
        self._check_timing_state()
        self.keeper = keeper
        return TimeReply(device_ms=raw.device_ms, wall_ms=raw.wall_ms, stop_reason=raw.stop_reason, clock=raw.clock,
                         integrity=self._integrity(), l2=self.l2_state, clock_tampered_reps=raw.tampered_reps,
                         host_bound_reps=raw.host_bound_reps, flush_ms=raw.flush_ms, hold=raw.hold,
                         tail_ms=raw.tail_ms, waited_ms=raw.waited_ms)

    def timed_outputs(self, request: TimedOutputsRequest) -> TimedOutputsReply:
        """A sample of timed outputs (the last of each input set and some drawn at random), fingerprinted
        again after a settle (on the first request, `first` 0); written outside the judge's clock around
        `time`, each as [set, scale step, rep, *outputs], from the request's `first` on: into the shared region
        while they fit, else one into its own file (`timed_{i}.kgt` in the given directory), so that no file
        holds more than one call's outputs."""
        kept = self.keeper.kept() if self.keeper else []
        changed: list[int] = []
        if request.first == 0:
            self._settle(self.settle_s)
            self._check_timing_state()
            changed = [e.rep for e in kept if fingerprints(e.outputs) != e.at_return]
        with inert():
            # Outputs at the top level, where the judge's read moves them to its device.
            entries = [[e.tag[0], e.tag[1], e.rep, *[v if why_not_plain(v) == "" else None for v in e.outputs]]
                       for e in kept[request.first:]]
            ends = self._save_timed(request, entries)
        return TimedOutputsReply(kept=len(kept), changed_after_return=tuple(changed), integrity=self._integrity(),
                                 ends=ends)

    def _region_view(self, offered: int) -> memoryview | None:
        """The part of the judge's region a request offers, mapped; None where it offers none or there is none."""
        return self.region.view(offered) if self.region and offered else None

    def _save_timed(self, request: TimedOutputsRequest, entries: list[list[Any]]) -> tuple[int, ...]:
        """The entries into the region one after another while they fit (their ends), else the first into its
        file (0) and no more: the judge reads these and asks for the rest."""
        view = self._region_view(request.region_bytes)
        ends: list[int] = []
        for i, entry in enumerate(entries, start=request.first):
            start = aligned(ends[-1]) if ends else 0
            written = tensorfile.save_to_memory(view[start:], entry) if view is not None else None
            if written is None:
                if not ends:
                    tensorfile.save(request.outputs_dir / f"timed_{i}.kgt", entry)
                    ends.append(0)
                break
            ends.append(start + written)
        return tuple(ends)

    def _l2_changed(self) -> int:
        """The persisting-L2 set-aside in force, if it is not what the harness left there; else 0."""
        current = self.l2.limit() if self.l2 else 0
        return current if current != self.l2_expected else 0

    def _integrity(self) -> Integrity:
        flags = precision_flags.snapshot()
        changed = sorted(k for k in flags if flags[k] != self.flags_before.get(k))
        replaced = (self.guard.rebound() if self.guard else []) + self.tampered_state
        extra_threads = max(0, os_threads() - len(self.threads_at_load))
        return Integrity(replaced_functions=tuple(replaced), precision_flags_changed=tuple(changed),
                         extra_threads=extra_threads, torch_modes=tuple(active_modes()),
                         l2_limit_bytes=self._l2_changed(), extensions=self.extensions.report(),
                         peak_device_bytes=_peak_bytes(self.device))


def _peak_bytes(device: torch.device) -> int:
    return int(torch.cuda.max_memory_allocated(device)) if device.type == "cuda" else 0


def _prewarm(device: torch.device) -> None:
    """Start the thread pools and library handles torch creates lazily (OpenMP, BLAS, cuBLAS, CUDA's own
    threads), so that thread counts taken after loading do not blame the submission for them."""
    a = torch.ones(256, 256, device=device)
    (a @ a).sum().item()
    torch.ones(1 << 20, device=device).add_(1).sum().item()
    if device.type == "cuda":
        start = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
        end = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
        start.record()
        end.record()
        torch.cuda.synchronize(device)
        start.elapsed_time(end)


def _stamps(paths: Sequence[Path]) -> tuple[FileStamp, ...] | None:
    """Each file's stamp; None where one cannot be read."""
    try:
        return tuple((str(p), st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns) for p in paths
                     for st in (_stat(p),))
    except OSError:
        return None


def _shadowed(instance: object) -> tuple[str, ...]:
    """Instance attributes that hide a method of the instance's class."""
    methods = vars(type(instance))
    return tuple(sorted(k for k in vars(instance) if callable(methods.get(k))))


def _poison(device: torch.device, sizes: tuple[int, ...]) -> None:
    """Fill freed memory with 0xFF bytes (NaN for floats) so outputs that are never written cannot hold
    stale values that happen to be right. On a GPU the caching allocator hands the same blocks out next;
    on the CPU malloc usually does."""
    blocks = [torch.empty(n, dtype=torch.uint8, device=device) for n in sizes for _ in range(2) if n > 0]
    for block in blocks:
        block.fill_(0xFF)
    del blocks


def _format_exception(exc: BaseException) -> str:
    lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
    return "".join(lines[-40:])


def main() -> None:
    channel = ChildChannel.from_stdio()
    harness = Harness()
    # Set by the first command, before the submission is imported, and kept only in this frame: a reply
    # without it was not written by this loop (docs/threats.md 18).
    key = ""
    while (line := channel.receive()) is not None:
        received = protocol.read_request(line)
        if isinstance(received.request, ExitRequest):
            break
        key = key or received.channel_key
        answer, seconds = harness.handle(received.request)
        channel.send(protocol.reply_line(key, received.seq, answer, seconds))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
