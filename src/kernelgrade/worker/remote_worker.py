"""`kernelgrade worker`: a Celery worker on a GPU host, one judge per GPU (or CPU judges), serving the
queues of its device class.

The database stays the record of every job: a delivered task only names an evaluation, which a judge
claims through its lease (storage.jobs), grades, and records through the lease-guarded writes. The
worker also registers its judges and beats their heartbeats (GET /v1/workers), and runs a reaper that
sends again the jobs whose worker died or whose task was lost (storage.lease_reaper).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import timedelta

from celery import Celery

from kernelgrade.config import Settings
from kernelgrade.logs import configure_logging
from kernelgrade.storage.database import Database
from kernelgrade.storage.jobs import queued_job
from kernelgrade.storage.lease_reaper import reap_expired, reap_unsent
from kernelgrade.worker.celery_app import GRADE_TASK, CelerySender, make_celery, queue_name
from kernelgrade.worker.judge import BASELINE_IDLE_S, GradeOutcome, Judge
from kernelgrade.worker.judges import JudgeSlot, discover_judges
from kernelgrade.worker.pool import WorkerPool, pool_ready

log = logging.getLogger(__name__)

ALIVE_FILE = "worker.alive"


@dataclass(frozen=True)
class WorkerOptions:
    # None: detected (kernelgrade.evaluator.host.environment.device_class).
    device_class: str | None = None
    # GPUs this worker grades on (KERNELGRADE_JUDGES_PER_GPU judges each), or CPU judges on a host without one;
    # None: every visible GPU, or one CPU judge.
    concurrency: int | None = None


def worker_slots(options: WorkerOptions, per_gpu: int = 1) -> list[JudgeSlot]:
    """`per_gpu`: judges on each GPU (KERNELGRADE_JUDGES_PER_GPU); `options.concurrency` counts GPUs there."""
    slots = discover_judges(-1 if options.concurrency is None else options.concurrency, per_gpu)
    if slots[0].kind == "cpu" and (options.concurrency or 1) > 1:
        slots = [replace(slots[0], name=f"cpu{i}") for i in range(options.concurrency or 1)]
    if options.device_class:
        slots = [_renamed(slot, options.device_class) for slot in slots]
    return slots


def _renamed(slot: JudgeSlot, device_class: str) -> JudgeSlot:
    """The slot under the operator's class name: its own queue and the class recorded on its results."""
    routes = tuple((device_class if key == slot.device_class else key, device_class if cls == slot.device_class
                    else cls) for key, cls in slot.routes)
    return replace(slot, device_class=device_class, routes=routes)


class JudgeDesk:
    """Lends a free judge serving a routing key to one task at a time (tasks run in Celery threads)."""

    def __init__(self, judges: list[Judge]) -> None:
        self.judges, self.free = judges, list(judges)
        self.changed = threading.Condition()
        self.free_since = {judge: time.monotonic() for judge in judges}

    @contextmanager
    def idle_judge(self, idle_s: float) -> Iterator[Judge | None]:
        """A judge free for at least `idle_s`, lent until the block ends (tasks wait for it meanwhile), or None."""
        with self.changed:
            now = time.monotonic()
            judge = next((j for j in self.free if now - self.free_since[j] >= idle_s), None)
            if judge is not None:
                self.free.remove(judge)
        if judge is None:
            yield None
            return
        try:
            yield judge
        finally:
            self._give_back(judge)

    @contextmanager
    def judge_for(self, routing_key: str) -> Iterator[Judge | None]:
        if not any(routing_key in judge.slot.serves for judge in self.judges):
            yield None
            return
        with self.changed:
            self.changed.wait_for(lambda: self._serving(routing_key) is not None)
            judge = self._serving(routing_key)
            assert judge is not None
            self.free.remove(judge)
        try:
            yield judge
        finally:
            self._give_back(judge)

    def _give_back(self, judge: Judge) -> None:
        with self.changed:
            self.free.append(judge)
            self.free_since[judge] = time.monotonic()
            self.changed.notify_all()

    def _serving(self, routing_key: str) -> Judge | None:
        return next((judge for judge in self.free if routing_key in judge.slot.serves), None)


class GradeHandler:
    """The body of the grade task: find the job's routing key, borrow a judge, grade, send again if the
    judge gave the job back to the queue (a grader fault with attempts left)."""

    def __init__(self, database: Database, desk: JudgeDesk, sender: CelerySender) -> None:
        self.database, self.desk, self.sender = database, desk, sender

    def __call__(self, evaluation_id: int) -> str:
        with self.database.session() as session:
            job = queued_job(session, evaluation_id)
        if job is None:
            return GradeOutcome.SKIPPED.value
        with self.desk.judge_for(job.requested_device) as judge:
            outcome = judge.grade_delivered(evaluation_id) if judge else GradeOutcome.SKIPPED
        if outcome is GradeOutcome.REQUEUED:
            self.sender.send(evaluation_id, job.requested_device)
        return outcome.value


class IdleWork:
    """What an embedded judge does between jobs, for judges that only grade what the broker delivers: a judge
    left idle for BASELINE_IDLE_S measures a torch.compile baseline that graded evaluations wait for, or else
    prepares a problem (Judge.use_idle_time)."""

    def __init__(self, settings: Settings, desk: JudgeDesk) -> None:
        self.settings, self.desk = settings, desk
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="baselines", daemon=True)

    def _loop(self) -> None:
        while not self.stopping.wait(self.settings.poll_seconds):
            worked = True
            while worked and not self.stopping.is_set():
                with self.desk.idle_judge(BASELINE_IDLE_S) as judge:
                    worked = judge is not None and judge.use_idle_time()


class Reaper:
    """A beat-like loop in every worker: sends again the jobs whose lease expired, ends those out of attempts,
    and sends again queued jobs whose task the broker may have lost. Several workers may run it at once;
    each lost job is sent again by exactly one of them."""

    def __init__(self, settings: Settings, database: Database, sender: CelerySender) -> None:
        self.settings, self.database, self.sender = settings, database, sender
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="reaper", daemon=True)

    def _loop(self) -> None:
        # As often as judges renew their leases: a lost job waits at most a lease and a third to run again.
        while not self.stopping.wait(self.settings.lease_seconds / 3):
            try:
                self.sweep()
                # For the container's health check: this process runs and reaches the database.
                (self.settings.data_dir / ALIVE_FILE).touch()
            except Exception:
                log.exception("the reaper failed; trying again")

    def sweep(self) -> None:
        with self.database.session() as session:
            reaped = reap_expired(session, self.settings.max_attempts)
        for evaluation_id, routing_key in reaped.resend:
            log.warning("evaluation %d lost its worker; sending it again", evaluation_id)
            self.sender.send(evaluation_id, routing_key)
        with self.database.session() as session:
            unsent = reap_unsent(session, timedelta(seconds=self.settings.resend_queued_seconds))
        for evaluation_id, routing_key in unsent:
            log.warning("evaluation %d is still queued; its task may be lost, sending it again", evaluation_id)
            self.sender.send(evaluation_id, routing_key)
        for evaluation_id in reaped.ended:
            log.warning("evaluation %d used up its attempts; ended with verdict error", evaluation_id)


def run_worker(settings: Settings, options: WorkerOptions) -> int:
    configure_logging(settings.log_level)
    if not pool_ready(settings):
        return 2
    database = Database.connect(settings.resolved_database_url)
    slots = worker_slots(options, settings.judges_per_gpu)
    pool = WorkerPool.start(settings, database, slots, polling=False)
    sender = CelerySender(settings)
    reaper = Reaper(settings, database, sender)
    queues = tuple(sorted({key for slot in slots for key in slot.serves}))
    app = make_celery(settings, queues)
    desk = JudgeDesk(pool.judges)
    handler = GradeHandler(database, desk, sender)
    idle_work = IdleWork(settings, desk)

    def grade(evaluation_id: int) -> str:
        return handler(evaluation_id)

    app.task(name=GRADE_TASK)(grade)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    reaper.thread.start()
    if settings.measures_compiled_baseline or settings.prepare_problems:
        idle_work.thread.start()
    try:
        names = tuple(queue_name(settings, key) for key in queues)
        return _serve_queues(app, names, len(slots), slots[0].device_class, settings.log_level.upper())
    finally:
        reaper.stopping.set()
        idle_work.stopping.set()
        _send_back(database, sender, pool.stop())
        sender.close()
        database.dispose()


def _serve_queues(app: Celery, queues: tuple[str, ...], judges: int, device_class: str, loglevel: str) -> int:
    log.info("worker %s serving queues %s with %d judge(s)", device_class, ", ".join(queues), judges)
    # Threads, not processes: a judge spends its time waiting on its sandboxed children, and the judges
    # share the lease heartbeat of this process.
    hostname = f"{device_class}-{os.getpid()}@{socket.gethostname()}"
    worker = app.Worker(queues=list(queues), concurrency=judges, pool="threads", loglevel=loglevel,
                        without_gossip=True, without_mingle=True, hostname=hostname)
    worker.start()
    return int(worker.exitcode or 0)


def _send_back(database: Database, sender: CelerySender, given_back: list[int]) -> None:
    """Jobs the stopping pool gave back are queued again, so their tasks must be sent again too."""
    for evaluation_id in given_back:
        with database.session() as session:
            job = queued_job(session, evaluation_id)
        if job is not None:
            sender.send(evaluation_id, job.requested_device)
