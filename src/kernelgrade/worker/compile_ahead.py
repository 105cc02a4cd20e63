"""Compiling queued jobs ahead of the judges, so a judge finds its job's build in the compile cache and the
device does not sit idle through a minute-long load_inline build.

`slots.workers` threads each take the first of the next few unclaimed jobs (in claim order) that no thread
has taken yet, and run evaluator.precompile() on it: two threads never build the same job, and two jobs with
the same source wait on the cache entry's lock, the second then hitting the cache. How many threads, and the
MAX_JOBS of each build, come from build_slots.py. They hold back while a judge is timing a CPU problem (on a
GPU host the first GPU judge grades those too), since a compile would take the cores the measurement runs on.

A job whose build has ended (built, found cached, or failed to build) goes into BuiltAhead, which the judges
claim from first: on a stream of new problems with CUDA builds in it, a judge that took jobs strictly in order
waited for a minute-long build while jobs behind it were ready.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

from kernelgrade.config import Settings
from kernelgrade.evaluator import Launcher, precompile
from kernelgrade.evaluator.sandbox.cpus import on_cpus
from kernelgrade.storage.database import Database
from kernelgrade.storage.jobs import QueuedJob, queued_job, queued_jobs
from kernelgrade.worker.build_slots import BuildSlots
from kernelgrade.worker.grading_request import RequestBuilder, problem_spec
from kernelgrade.worker.input_shapes import fill_missing_shapes

log = logging.getLogger(__name__)

# How far ahead of the judges to look: enough to keep a few GPUs fed, small enough to be one cheap query. With
# more build threads, twice their number, so that every thread finds a job while the others' builds run.
LOOKAHEAD = 8
# While a CPU judge is timing, check again this often.
QUIET_WAIT_S = 0.2


class BuiltAhead:
    """The queued jobs whose builds compile-ahead has ended, shared with the judges of its process."""

    def __init__(self) -> None:
        self._ids: set[int] = set()
        self._lock = threading.Lock()

    def add(self, evaluation_id: int) -> None:
        with self._lock:
            self._ids.add(evaluation_id)

    def keep_only(self, queued: Sequence[int]) -> None:
        """Forget the jobs no longer queued (claimed or finished)."""
        with self._lock:
            self._ids &= set(queued)

    def ids(self) -> frozenset[int]:
        with self._lock:
            return frozenset(self._ids)


class CompileAhead:
    def __init__(self, settings: Settings, database: Database, launcher: Launcher, serves: Sequence[str],
                 must_stay_quiet: Callable[[], bool], wake: threading.Event, stopping: threading.Event,
                 slots: BuildSlots | None = None, cpus: tuple[int, ...] = (), built: BuiltAhead | None = None) -> None:
        self.slots = slots or BuildSlots(1, settings.compile_jobs, "one")
        self.cpus = cpus
        self.built = built or BuiltAhead()
        self.settings, self.database, self.launcher = settings, database, launcher
        self.serves = tuple(serves)
        self.must_stay_quiet, self.wake, self.stopping = must_stay_quiet, wake, stopping
        self.builder = RequestBuilder(settings.replace(compile_jobs=self.slots.jobs), cpus)
        self.lookahead = max(LOOKAHEAD, 2 * self.slots.workers)
        # Jobs a thread has taken while they are still queued, and those being built now (kept until the build
        # ends even if the job leaves the window, so that a job requeued meanwhile is not built twice at once).
        # Both guarded by `lock`.
        self.taken: set[int] = set()
        self.building: set[int] = set()
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self._loop, args=(index == 0,), name=f"compile-ahead-{index}",
                                         daemon=True) for index in range(self.slots.workers)]

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def _loop(self, fills_shapes: bool) -> None:
        # On the build cores for good: whatever this thread starts (builds, problem loading) stays off the
        # judges' cores.
        with on_cpus(self.cpus):
            self._run(fills_shapes)

    def _run(self, fills_shapes: bool) -> None:
        # One thread records the problems' input shapes: the others would only repeat its writes.
        if fills_shapes:
            self._fill_shapes()
        while not self.stopping.is_set():
            if self.must_stay_quiet():
                self.stopping.wait(QUIET_WAIT_S)
                continue
            job = self.take_next()
            if job is None:
                self.wake.wait(self.settings.poll_seconds)
                self.wake.clear()
                if fills_shapes:
                    self._fill_shapes()
                continue
            try:
                self._precompile(job)
            finally:
                with self.lock:
                    self.building.discard(job.evaluation_id)

    def take_next(self) -> QueuedJob | None:
        """The next queued job no thread has taken, now taken by the caller; None when there is none."""
        try:
            with self.lock, self.database.session() as session:
                ids = queued_jobs(session, self.serves, self.lookahead)
                self.taken &= set(ids)  # forget jobs that were claimed or finished
                self.built.keep_only(ids)
                todo = next((i for i in ids if i not in self.taken and i not in self.building), None)
                if todo is None:
                    return None
                self.taken.add(todo)
                job = queued_job(session, todo)
                if job is not None:
                    self.building.add(todo)
                return job
        except Exception:
            log.exception("compile-ahead could not read the queue")
            return None

    def _precompile(self, job: QueuedJob) -> None:
        try:
            # Built for GPU 0's architecture: a host's GPUs are normally one model; on a mixed host a judge
            # on another architecture just misses the cache and builds it itself.
            request = self.builder.build(problem_spec(job.problem), job.source, 0)
            outcome = precompile(request, self.launcher, self.settings.host_lock)
        except Exception:  # the judge will compile (and report) it itself
            log.warning("compile-ahead of evaluation %d failed", job.evaluation_id, exc_info=True)
            return
        self.built.add(job.evaluation_id)
        log.info("compile-ahead: evaluation %d %s", job.evaluation_id,
                 "was cached" if outcome.cache_hit else "built" if outcome.failure is None else "failed to build")

    def _fill_shapes(self) -> None:
        try:
            fill_missing_shapes(self.database)
        except Exception:
            log.warning("could not record problems' input shapes", exc_info=True)
