"""Compiling queued jobs ahead of the judges, so a judge finds its job's build in the compile cache and the
device does not sit idle through a 50-second load_inline build.

The thread looks at the next few unclaimed jobs in claim order and runs evaluator.precompile() on the first
one it has not compiled yet. On a CPU-only pool it holds back while a judge is timing, since a compile
would take the cores the measurement runs on.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

from kernelgrade.config import Settings
from kernelgrade.evaluator import Launcher, precompile
from kernelgrade.service.worker.grading_request import RequestBuilder, problem_spec
from kernelgrade.service.worker.input_shapes import fill_missing_shapes
from kernelgrade.storage.database import Database
from kernelgrade.storage.jobs import QueuedJob, queued_job, queued_jobs

log = logging.getLogger(__name__)

# How far ahead of the judges to look: enough to keep a few GPUs fed, small enough to be one cheap query.
LOOKAHEAD = 8
# While a CPU judge is timing, check again this often.
QUIET_WAIT_S = 0.2


class CompileAhead:
    def __init__(self, settings: Settings, database: Database, launcher: Launcher, serves: Sequence[str],
                 must_stay_quiet: Callable[[], bool], wake: threading.Event, stopping: threading.Event) -> None:
        self.settings, self.database, self.launcher = settings, database, launcher
        self.serves = tuple(serves)
        self.must_stay_quiet, self.wake, self.stopping = must_stay_quiet, wake, stopping
        self.builder = RequestBuilder(settings)
        self.compiled: set[int] = set()
        self.thread = threading.Thread(target=self._loop, name="compile-ahead", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _loop(self) -> None:
        self._fill_shapes()
        while not self.stopping.is_set():
            if self.must_stay_quiet():
                self.stopping.wait(QUIET_WAIT_S)
                continue
            job = self._next_job()
            if job is None:
                self.wake.wait(self.settings.poll_seconds)
                self.wake.clear()
                self._fill_shapes()
                continue
            self._precompile(job)

    def _next_job(self) -> QueuedJob | None:
        try:
            with self.database.session() as session:
                ids = queued_jobs(session, self.serves, LOOKAHEAD)
                self.compiled &= set(ids)  # forget jobs that were claimed or finished
                todo = next((i for i in ids if i not in self.compiled), None)
                return queued_job(session, todo) if todo is not None else None
        except Exception:
            log.exception("compile-ahead could not read the queue")
            return None

    def _precompile(self, job: QueuedJob) -> None:
        self.compiled.add(job.evaluation_id)
        try:
            # Built for GPU 0's architecture: a host's GPUs are normally one model; on a mixed host a judge
            # on another architecture just misses the cache and builds it itself.
            request = self.builder.build(problem_spec(job.problem), job.source, 0)
            outcome = precompile(request, self.launcher)
        except Exception:  # the judge will compile (and report) it itself
            log.warning("compile-ahead of evaluation %d failed", job.evaluation_id, exc_info=True)
            return
        log.info("compile-ahead: evaluation %d %s", job.evaluation_id,
                 "was cached" if outcome.cache_hit else "built" if outcome.failure is None else "failed to build")

    def _fill_shapes(self) -> None:
        try:
            fill_missing_shapes(self.database)
        except Exception:
            log.warning("could not record problems' input shapes", exc_info=True)
