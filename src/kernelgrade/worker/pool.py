"""The embedded worker pool of `kernelgrade serve`: judges, compile-ahead threads and a heartbeat thread,
all in the API's process. Jobs live in the database (storage.jobs), so stopping the process at any point
loses nothing: a job being graded keeps a lease that expires, and the next start (or another worker)
takes it over, counting an attempt.

On start the pool also frees at once the leases of judges that ran on this host in processes that are
gone, so a restarted server picks up its interrupted job without waiting for the lease to expire.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
from typing import TYPE_CHECKING

import psutil

from kernelgrade import __version__
from kernelgrade.config import Settings
from kernelgrade.evaluator.cpu_threads import fit_to
from kernelgrade.evaluator.host import header_pch
from kernelgrade.evaluator.host.host_lock import HostLock
from kernelgrade.sandbox_policy import unsandboxed
from kernelgrade.storage.database import Database
from kernelgrade.storage.jobs import expire_leases, requeue_job
from kernelgrade.storage.records import WorkerInfo
from kernelgrade.storage.workers import NewWorker, heartbeat, register_worker, remove_workers, workers_on_host
from kernelgrade.worker.build_slots import BuildSlots, plan_build_slots, read_host
from kernelgrade.worker.compile_ahead import BuiltAhead, CompileAhead
from kernelgrade.worker.cores import CorePlan, available_cpus, plan_cores
from kernelgrade.worker.judge import Judge, JudgeCores
from kernelgrade.worker.judges import JudgeSlot, discover_judges

if TYPE_CHECKING:
    from kernelgrade.evaluator import Launcher

log = logging.getLogger(__name__)

# Threads still busy this long after stop() are left behind (they are daemons; the process exits anyway).
STOP_JOIN_S = 5.0
# A process that started this long after a worker registered is another one, reusing the worker's pid. Its
# start time is the kernel's boot time (whole seconds) plus its age, so it moves with every step of the wall
# clock since boot: a minute absorbs the rounding and a clock correction, while a pid taken over after a
# restart is usually a process started far later. One missed only waits for the lease to expire, as before.
START_TIME_SLACK_S = 60.0


class WorkerPool:
    def __init__(self, settings: Settings, database: Database, judges: list[Judge], compiler: CompileAhead,
                 stopping: threading.Event) -> None:
        self.settings, self.database = settings, database
        self.judges, self.compiler, self.stopping = judges, compiler, stopping
        self.heartbeat = threading.Thread(target=self._heartbeat_loop, name="heartbeat", daemon=True)

    @classmethod
    def start(cls, settings: Settings, database: Database, slots: list[JudgeSlot] | None = None, *,
              polling: bool = True) -> WorkerPool:
        """`polling`: judges look for queued jobs themselves (embedded). Off, they only grade the jobs handed
        to them (Judge.grade_delivered, from a broker's tasks); the heartbeat still renews their leases."""
        launcher = pool_launcher(settings)
        slots = slots if slots is not None else discover_judges(settings.local_judges, settings.judges_per_gpu)
        stopping = threading.Event()
        prefix = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"
        cores = core_plan(settings, slots)
        own_process = grades_apart(settings, slots)
        if not own_process and not any(slot.kind == "cpu" for slot in slots):
            fit_to(cores.judge_cpus())  # torch's pool in this process serves judges on their own cores alone
        built = BuiltAhead()
        judges = [Judge(slot, f"{prefix}:{slot.name}", settings, database, launcher, threading.Event(), stopping,
                        judge_cores(cores, slots, slot), built, own_process) for slot in slots]
        serves = sorted({key for slot in slots for key in slot.serves})
        build_slots = compile_slots(settings, slots, cores)
        compiler = CompileAhead(settings, database, launcher, serves,
                                lambda: any(j.state.timing_on_cpu for j in judges), threading.Event(), stopping,
                                build_slots, cores.builds, built)
        pool = cls(settings, database, judges, compiler, stopping)
        pool._register(slots, launcher.level)
        prepare_headers(settings, slots)
        if polling:
            for judge in judges:
                judge.start()
            compiler.start()
        pool.heartbeat.start()
        from kernelgrade.evaluator.sandbox.levels import describe_launcher

        judges_text = ", ".join(f"{s.name}={s.device_class}" for s in slots)
        if unsandboxed(launcher.level):
            log.warning("worker pool: %s with NO SANDBOX (KERNELGRADE_ALLOW_UNSANDBOXED): submissions can read what"
                        " this process's user can read and reach local servers", judges_text)
        else:
            log.info("worker pool: %s (sandbox %s)", judges_text, "; ".join(describe_launcher(launcher)))
        log.info("cores: %s (KERNELGRADE_MEASURE_CORES)", cores.why)
        log.info("judges grade in %s (KERNELGRADE_JUDGE_PROCESSES)",
                 "a process each" if own_process else "threads of this process")
        if polling:
            log.info("compile-ahead: %d concurrent build(s), MAX_JOBS %d each (%s; KERNELGRADE_COMPILE_WORKERS)",
                     build_slots.workers, build_slots.jobs, build_slots.why)
        return pool

    def _register(self, slots: list[JudgeSlot], sandbox: str) -> None:
        import torch

        versions = (("kernelgrade", __version__), ("torch", torch.__version__), ("cuda", torch.version.cuda or ""),
                    ("sandbox", sandbox))
        host = socket.gethostname()
        with self.database.session() as session:
            dead = [w for w in workers_on_host(session, host) if worker_gone(w)]
            freed = expire_leases(session, [w.name for w in dead])
            remove_workers(session, [w.name for w in dead])
            for judge, slot in zip(self.judges, slots, strict=True):
                register_worker(session, NewWorker(judge.owner, slot.device_class, slot.serves, host, os.getpid(),
                                                   versions, slot.memory_bytes))
        if freed:
            log.warning("took over %d job(s) left by a previous server on this host", freed)

    def notify(self) -> None:
        """A job was queued: wake the idle judges and compile-ahead threads."""
        for judge in self.judges:
            judge.wake.set()
        self.compiler.wake.set()

    def _heartbeat_loop(self) -> None:
        # A third of the lease: two renewals can fail (a slow disk, a busy database) before a live job's
        # lease runs out and another worker takes it.
        interval = self.settings.lease_seconds / 3
        while not self.stopping.wait(interval):
            try:
                self.beat()
            except Exception:
                log.exception("heartbeat failed")

    def beat(self) -> None:
        from kernelgrade.storage.jobs import renew_leases

        current = {j.owner: j.state.current for j in self.judges}
        with self.database.session() as session:
            renew_leases(session, {owner: job for owner, job in current.items() if job is not None},
                         self.settings.lease_seconds)
            heartbeat(session, current)

    def stop(self) -> list[int]:
        """Stop claiming; give running jobs back to the queue (without counting the attempt) for the next start.
        Returns the ids of the jobs given back."""
        self.stopping.set()
        self.notify()
        given_back: list[int] = []
        try:
            with self.database.session() as session:
                for judge in self.judges:
                    current = judge.state.current
                    if current is not None and requeue_job(session, current, judge.owner, "the server stopped"
                                                           " during grading; requeued", refund_attempt=True):
                        given_back.append(current)
                remove_workers(session, [j.owner for j in self.judges])
        except Exception:
            log.exception("could not hand running jobs back; their leases will expire instead")
        for thread in (self.heartbeat, *self.compiler.threads, *(j.thread for j in self.judges)):
            if thread.ident is None:  # never started (a pool without polling)
                continue
            thread.join(timeout=STOP_JOIN_S if thread is self.heartbeat else 0.1)
        for judge in self.judges:
            judge.close()
        return given_back


def prepare_headers(settings: Settings, slots: list[JudgeSlot]) -> None:
    """Start building the precompiled header CPU builds use, where this pool grades CPU problems, so that the
    first submission's build finds it (or at least does not wait for it)."""
    if settings.precompiled_headers and any(slot.kind == "cpu" for slot in slots):
        header_pch.prepare(settings.cache_dir, HostLock(settings.host_lock))


def gpu_judges(slots: list[JudgeSlot]) -> int:
    return sum(1 for slot in slots if slot.kind == "cuda")


def grades_apart(settings: Settings, slots: list[JudgeSlot]) -> bool:
    """Whether each judge grades in a process of its own (KERNELGRADE_JUDGE_PROCESSES)."""
    if settings.judge_processes == "auto":
        return gpu_judges(slots) >= 2
    return settings.judge_processes == "on"


def core_plan(settings: Settings, slots: list[JudgeSlot]) -> CorePlan:
    return plan_cores(settings.measure_cores, gpu_judges(slots), available_cpus())


def judge_cores(plan: CorePlan, slots: list[JudgeSlot], slot: JudgeSlot) -> JudgeCores:
    gpu_slots = [s for s in slots if s.kind == "cuda"]
    measure = plan.for_judge(gpu_slots.index(slot)) if slot in gpu_slots else ()
    return JudgeCores(measure, plan.builds)


def compile_slots(settings: Settings, slots: list[JudgeSlot], cores: CorePlan | None = None) -> BuildSlots:
    """Builds share the cores set aside for them (placed), or the whole host less the judges' share."""
    placed = len(cores.builds) if cores is not None and cores.builds else None
    return plan_build_slots(settings.compile_workers, settings.compile_jobs, gpu_judges(slots), read_host(),
                            placed)


def pool_launcher(settings: Settings) -> Launcher:
    """The judges' launcher; raises SandboxUnavailable where the settings' sandbox cannot be had (none
    without the explicit opt-out included)."""
    from kernelgrade.worker.sandboxing import settings_launcher

    return settings_launcher(settings)


def pool_ready(settings: Settings) -> bool:
    """Refuse to start (with the reason) where the judges could not isolate submissions as required."""
    from kernelgrade.evaluator.sandbox.levels import SandboxUnavailable

    try:
        pool_launcher(settings)
    except SandboxUnavailable as exc:
        log.error("refusing to start the worker pool: %s", exc)
        return False
    return True


def worker_gone(worker: WorkerInfo) -> bool:
    """True if the worker's process surely no longer runs: its pid is free, a zombie, our own (a container
    restarted with the same pid) or another process's, one started after the worker registered."""
    if worker.pid == os.getpid():
        return True
    try:
        process = psutil.Process(worker.pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return True
        started = process.create_time()
    except psutil.NoSuchProcess:
        return True
    except psutil.AccessDenied:
        return False
    return started > worker.started_at.timestamp() + START_TIME_SLACK_S
