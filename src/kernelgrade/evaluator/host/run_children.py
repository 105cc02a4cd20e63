"""Run children started before their submissions are known.

Starting a sandboxed child, importing torch and creating its CUDA context takes seconds, and none of it
depends on the submission. A long-lived judge keeps `spares` children per (device, environment) that have
done all of that and wait, each in a fresh work dir of its own; an evaluation takes one, copies its built
libraries in and loads the submission. A child is never used for a second submission: it is taken once and
killed with its evaluation. With no spares (a one-off evaluate()) a child is started on demand, by the same
code. The one exception is a reference's own child, which never sees submission code: the judge may keep it
loaded for the next evaluation of the same problem (`keep`, `reclaim`).

A spare must never touch the device while this judge measures: creating a CUDA context and the warm-up's
kernels would run beside the timed calls. The timed phases hold `quiet()`; a spare that has imported torch
waits for it before its device warm-up (before it even starts on the CPU, where importing torch competes with
the measurement). Nor may a spare's start take the measurement's cores: a GPU judge's spares start on the build
cores (`spare_cpus`), and the one a job takes moves onto the job's cores.

Where other judges grade on the same GPU, the device's lock (device_lock.py) keeps their work out of this judge's
measurements and this judge's out of theirs: an evaluation holds it shared (`using`), `quiet()` holds it alone, and
a spare's device warm-up holds it shared beside the others.
"""

from __future__ import annotations

import logging
import queue
import tempfile
import threading
from collections import OrderedDict, deque
from collections.abc import Hashable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path

from kernelgrade.evaluator.host.device_lock import DeviceLock
from kernelgrade.evaluator.host.host_lock import HostLock
from kernelgrade.evaluator.host.removals import removals
from kernelgrade.evaluator.host.session import RunSession, StageFailed
from kernelgrade.evaluator.sandbox.cpus import here, on_cpus, place_tree
from kernelgrade.evaluator.sandbox.launcher import Launcher

log = logging.getLogger(__name__)

# Importing torch and creating a CUDA context under a sandbox takes 3-6 s on a GPU host; a minute covers a
# cold disk cache and a host busy with builds.
WARM_S = 60.0
# A spare's shared region is given pages ahead (wire/shared_region.py: populate) for the largest region that the
# last REGION_HINTS evaluations of its kind took: a stream that interleaves 4096^2 matmuls (256 MiB regions)
# with small problems would otherwise size it for the last one, usually small. Eight, as many as a GPU judge
# keeps spares: at one child an evaluation, a spare started now is taken about eight evaluations later.
REGION_HINTS = 8
# At most this much a spare: idle spares hold their pages (eight spares, 4 GiB of host memory at most), and a
# problem's first growth costs 0.1-0.15 s at 256 MiB, next to its own verdict's seconds beyond that.
POPULATE_MAX_BYTES = 512 * 1024 * 1024


@dataclass(frozen=True)
class ChildKind:
    """What a run child is started for: the judge's device index (None on the CPU), the device as the
    child sees it, and the environment its builds were made for."""

    gpu_index: int | None
    device: str
    env: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class KeptChild:
    """A child kept between evaluations under `key`, and how many evaluations it has served."""

    key: Hashable
    session: RunSession
    uses: int


class RunChildren:
    def __init__(self, launcher: Launcher, work_root: Path, spares: int = 0, hidden: tuple[Path, ...] = (),
                 host_lock: HostLock | None = None, spare_cpus: tuple[int, ...] = (), kept: int = 0,
                 device_lock: DeviceLock | None = None) -> None:
        """`host_lock`: also held, beside this judge's own quiet lock, around CPU measurements (alone) and CPU
        spares' starts (shared), so that judges in other processes on the host keep out of them too
        (host_lock.py). `spare_cpus`: where spares start (importing torch takes a core for seconds), away from
        the cores of the judge's measurements; a spare taken for a job moves to the taking thread's cores.
        `kept`: how many children that never ran submission code (references') are kept between evaluations.
        `device_lock`: the lock of the GPU this judge grades on, which other judges may share (device_lock.py)."""
        self.launcher, self.work_root, self.spares, self.hidden = launcher, work_root, spares, hidden
        self.device_lock = device_lock
        self.kept_most = kept
        self.host_lock, self.spare_cpus = host_lock, spare_cpus
        self._ready: dict[ChildKind, list[RunSession]] = {}
        self._starting: dict[ChildKind, int] = {}
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)  # a spare became ready or failed to
        self._quiet = threading.Lock()  # held while this judge measures
        self._closed = False
        # Spares are started by long-lived threads, one per spare: bwrap's --die-with-parent ties a child's
        # life to the thread that started it, so a thread that ended after starting one would take its child
        # along. One per spare, because a start (seconds of importing torch) is longer than a small problem's
        # evaluation: started one after another, spares would not keep up with back-to-back jobs.
        self._requests: queue.Queue[ChildKind | None] = queue.Queue()
        self._starters: list[threading.Thread] = []
        # References' children between evaluations of their problems, least recently kept first.
        self._kept: OrderedDict[Hashable, KeptChild] = OrderedDict()
        self._regions: dict[ChildKind, deque[int]] = {}  # the region sizes of recent evaluations, by kind

    def take(self, kind: ChildKind, refill: bool = True) -> RunSession:
        """A warm child of this kind (waiting for one that is starting), started now if none is coming.
        `refill`: start a spare in its place now; without it, the caller calls `refill` later (a child taken
        just before a measurement: the spare's start would hold the measurement's quiet lock).
        Raises StageFailed if one started now cannot warm up (the sandbox or torch is broken)."""
        session = self._pop_live(kind)
        if refill:
            self.refill(kind)
        if session is None:
            return self._start(kind)
        return self._placed_here(session)

    def take_spare(self, kind: ChildKind) -> RunSession | None:
        """A warm child of this kind, ready now or once one already starting is; None where none is ready or
        starting. None is started here, so a thread that then ends may call it: a child started by a thread that
        ends would end with it (bwrap's --die-with-parent). Its spare is not replaced: the caller calls `refill`
        later, as after take(refill=False)."""
        session = self._pop_live(kind)
        return self._placed_here(session) if session is not None else None

    def _placed_here(self, session: RunSession) -> RunSession:
        if self.spare_cpus:
            place_tree(session.child.proc.pid, here())
        return session

    def expect(self, kind: ChildKind) -> None:
        """A child of `kind` will be taken soon (an evaluation's reference child, for its timing stage): one is
        started now, by the spares' threads, unless a spare of that kind is ready or starting already."""
        with self._lock:
            if self._closed or self._ready.get(kind) or self._starting.get(kind):
                return
            self._starting[kind] = 1
            self._ensure_starters()
        self._requests.put(kind)

    @contextmanager
    def quiet(self, cpu: bool = False) -> Iterator[None]:
        """Held around a measurement: no spare of this judge touches the device meanwhile; on the CPU (`cpu`),
        none of another judge on the host starts either; on a GPU, nothing of another judge of the device runs."""
        with self._quiet, self._alone(cpu):
            yield

    def using(self, cpu: bool = False) -> AbstractContextManager[None]:
        """Held by an evaluation, or a problem's preparation, while it works on a GPU outside its measurements:
        no other judge of the device measures meanwhile."""
        return self.device_lock.using() if self.device_lock is not None and not cpu else nullcontext()

    def _alone(self, cpu: bool) -> AbstractContextManager[None]:
        if cpu:
            return self.host_lock.held() if self.host_lock is not None else nullcontext()
        return self.device_lock.alone() if self.device_lock is not None else nullcontext()

    def keep(self, kept: KeptChild) -> None:
        """Keeps a child that never ran submission code (a reference's: judge/reference_child.py) for the next
        evaluation of its problem to `reclaim`, where this judge keeps children between evaluations (else it is
        discarded). At most `kept_most` are kept, one per key: the least recently kept goes first."""
        gone: list[KeptChild] = []
        with self._lock:
            if self.kept_most > 0 and not self._closed:
                previous = self._kept.pop(kept.key, None)
                gone += [previous] if previous else []
                self._kept[kept.key] = kept
                while len(self._kept) > self.kept_most:
                    gone.append(self._kept.popitem(last=False)[1])
            else:
                gone.append(kept)
        for child in gone:
            discard(child.session)

    def keeps(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._kept

    def reclaim(self, key: Hashable) -> KeptChild | None:
        """The child kept under `key`, if it is still alive (else it is discarded)."""
        with self._lock:
            kept = self._kept.pop(key, None)
        if kept is None or kept.session.child.proc.poll() is None:
            return kept
        discard(kept.session)
        return None

    def let_go_of_kept(self) -> None:
        """Every kept child: the device they hold is wanted (an evaluation there ran out of memory)."""
        with self._lock:
            gone = list(self._kept.values())
            self._kept.clear()
        for child in gone:
            discard(child.session)

    def used_region(self, kind: ChildKind, nbytes: int) -> None:
        """An evaluation's child of `kind` took `nbytes` of its shared region: the spares started from now on are
        given pages for the largest of the recent ones."""
        with self._lock:
            self._regions.setdefault(kind, deque(maxlen=REGION_HINTS)).append(nbytes)

    def _region_hint(self, kind: ChildKind) -> int:
        with self._lock:
            return min(POPULATE_MAX_BYTES, max(self._regions.get(kind, ()), default=0))

    def ready(self, kind: ChildKind) -> int:
        with self._lock:
            return len(self._ready.get(kind, []))

    def close(self) -> None:
        with self._lock:
            self._closed = True
            waiting = [s for sessions in self._ready.values() for s in sessions]
            self._ready.clear()
            waiting += [kept.session for kept in self._kept.values()]
            self._kept.clear()
            self._changed.notify_all()
        for _ in self._starters:
            self._requests.put(None)
        for session in waiting:
            discard(session)
        # Gone when this returns, with the dirs of the evaluations before (a one-off evaluate() closes its
        # children last): nothing of a closed judge's is left on disk.
        removals().wait()

    def _pop_live(self, kind: ChildKind) -> RunSession | None:
        """A waiting child that is still alive (one may have been killed meanwhile: the OOM killer, say). A
        spare already starting is nearer to ready than one started now, so it is waited for."""
        while True:
            with self._lock:
                self._changed.wait_for(lambda: self._ready.get(kind) or not self._starting.get(kind) or self._closed,
                                       WARM_S)
                ready = self._ready.get(kind, [])
                session = ready.pop(0) if ready else None
            if session is None or session.child.proc.poll() is None:
                return session
            discard(session)

    def _start(self, kind: ChildKind, before_device: AbstractContextManager[object] | None = None,
               region_bytes: int = 0) -> RunSession:
        """`region_bytes`: of the child's region given pages before the device warm-up (a spare's, off any
        evaluation's path; a child started for a job now would only pay for them earlier)."""
        self.work_root.mkdir(parents=True, exist_ok=True)
        work_dir = Path(tempfile.mkdtemp(prefix="job-", dir=self.work_root))
        session = RunSession(self.launcher, work_dir, kind.gpu_index, dict(kind.env), self.hidden)
        try:
            session.started(WARM_S)
            session.region.populate(region_bytes)  # host memory, no device work: outside the device locks
            with before_device or nullcontext():
                session.warm(kind.device, WARM_S)
        except StageFailed:
            discard(session)
            raise
        return session

    def _start_spare(self, kind: ChildKind) -> RunSession:
        region_bytes = self._region_hint(kind)
        if kind.gpu_index is None:  # on the CPU the whole start competes with a measurement
            with self._quiet, self.host_lock.shared() if self.host_lock else nullcontext():
                return self._start(kind, region_bytes=region_bytes)
        return self._start(kind, self._before_device(), region_bytes)

    @contextmanager
    def _before_device(self) -> Iterator[None]:
        """What a GPU spare holds for its device warm-up: this judge's quiet lock, and the device's beside the
        other judges' evaluations."""
        with self._quiet, self.device_lock.beside() if self.device_lock is not None else nullcontext():
            yield

    def refill(self, kind: ChildKind) -> None:
        """Spares of `kind` started until `spares` are ready or starting."""
        with self._lock:
            missing = self.spares - len(self._ready.get(kind, [])) - self._starting.get(kind, 0)
            if self._closed or missing <= 0:
                return
            self._starting[kind] = self._starting.get(kind, 0) + missing
            self._ensure_starters()
        for _ in range(missing):
            self._requests.put(kind)

    def _ensure_starters(self) -> None:
        """Called with the lock held."""
        while len(self._starters) < max(1, self.spares):
            starter = threading.Thread(target=self._start_spares, name=f"warm-children-{len(self._starters)}",
                                       daemon=True)
            self._starters.append(starter)
            starter.start()

    def _start_spares(self) -> None:
        with on_cpus(self.spare_cpus):
            self._serve_requests()

    def _serve_requests(self) -> None:
        while (kind := self._requests.get()) is not None:
            session: RunSession | None = None
            try:
                session = self._start_spare(kind)
            except Exception:  # the evaluation that needs one will start it itself and report the failure
                log.warning("could not start a warm run child", exc_info=True)
            with self._lock:
                self._starting[kind] -= 1
                if session is not None and not self._closed:
                    self._ready.setdefault(kind, []).append(session)
                    session = None
                self._changed.notify_all()
            if session is not None:
                discard(session)


def discard(session: RunSession) -> None:
    session.close()
    removals().remove(session.work_dir)
