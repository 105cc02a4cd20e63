"""One judge: a thread that claims jobs for its device, grades them with evaluate() through its grader (in
the thread, or in a process of the judge's own: grader.py), and records the result.

Every write is conditional on the judge's lease, so a result computed after the lease was lost (the pool
stopped and gave the job back, or the heartbeat stalled past expiry and another worker took it over) is
discarded rather than recorded twice. A result of verdict `error` (the grader's own fault) sends the job
back to the queue until its attempts reach the cap.

A torch.compile baseline measured on this device class within the configured age is handed to evaluate()
to reuse. None is measured on a verdict's path: with no job to claim, the judge measures a baseline that graded
evaluations wait for (worker/compiled_baselines.py), or else prepares a problem's trials ahead of its
submissions (worker/preparations.py).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from datetime import timedelta
from enum import Enum

import torch

from kernelgrade.config import Settings
from kernelgrade.evaluator import CompiledBaseline, EvalRequest, EvalResult, Launcher, Progress, Stage
from kernelgrade.evaluator.host.device_lock import device_lock_path
from kernelgrade.storage.baselines import fresh_baseline
from kernelgrade.storage.clock import utcnow
from kernelgrade.storage.database import Database
from kernelgrade.storage.jobs import Lease, claim_next, finish_job, requeue_job
from kernelgrade.storage.records import ClaimedJob, JobOutcome, ProblemRecord
from kernelgrade.worker.compile_ahead import BuiltAhead
from kernelgrade.worker.compiled_baselines import DueBaseline, next_due, store
from kernelgrade.worker.grader import Grader, GraderSpec, InProcessGrader
from kernelgrade.worker.grading_process import ProcessGrader
from kernelgrade.worker.grading_request import RequestBuilder, problem_spec
from kernelgrade.worker.job_outcome import (
    grader_fault,
    outcome_from_result,
    progress_to_store,
    stored_baseline,
)
from kernelgrade.worker.judges import JudgeSlot
from kernelgrade.worker.preparations import next_to_prepare, report
from kernelgrade.worker.progress_poster import ProgressPoster

log = logging.getLogger(__name__)

# Progress rows are for people watching; one write per half second per job is plenty and keeps a fast
# correctness loop from turning into a write storm on SQLite.
PROGRESS_INTERVAL_S = 0.5
# A judge measures a due torch.compile baseline only after this long without a job to claim: a client that
# posts its next submission once it has read a verdict does so within a second or two, and should not wait
# behind an inductor compile; a loop with work in flight keeps the queue from emptying for this long at all.
BASELINE_IDLE_S = 10.0


class GradeOutcome(Enum):
    GRADED = "graded"
    REQUEUED = "requeued"
    SKIPPED = "skipped"


@dataclass(frozen=True)
class JudgeCores:
    """Where a judge measures and where its builds go (worker/cores.py); empty: no placement."""

    measure: tuple[int, ...] = ()
    builds: tuple[int, ...] = ()


@dataclass
class JudgeState:
    current: int | None = None
    timing: bool = False
    cpu_job: bool = False  # the current job's problem runs on the CPU, where builds compete with its timing

    @property
    def timing_on_cpu(self) -> bool:
        return self.timing and self.cpu_job


class Judge:
    def __init__(self, slot: JudgeSlot, owner: str, settings: Settings, database: Database, launcher: Launcher,
                 wake: threading.Event, stopping: threading.Event, cores: JudgeCores | None = None,
                 built: BuiltAhead | None = None, own_process: bool = False) -> None:
        """`built`: the jobs whose builds compile-ahead has ended, claimed first. `own_process`: grade in a process
        of the judge's own (grading_process.py), else in its thread."""
        self.slot, self.owner, self.settings, self.database = slot, owner, settings, database
        self.built = built
        self.wake, self.stopping = wake, stopping
        self.cores = cores or JudgeCores()
        self.builder = RequestBuilder(settings, self.cores.builds)
        self.state = JudgeState()
        self.failed_baselines: set[tuple[int, str]] = set()  # (problem id, device class) this judge leaves alone
        self.looked_at: set[int] = set()  # problem versions this judge prepared or found prepared
        self.progress = ProgressPoster(database)
        device_lock = device_lock_path(settings.host_lock, slot.device_uuid) if slot.shares_device else None
        spec = GraderSpec(settings, launcher, slot.kind, self.cores.measure, self.cores.builds, device_lock)
        self.grader: Grader = ProcessGrader(spec, slot.name) if own_process else InProcessGrader(spec)
        self.thread = threading.Thread(target=self._loop, name=f"judge-{slot.name}", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def close(self) -> None:
        """Stop the grader (with the warm children it keeps) and the progress writer."""
        self.grader.close()
        self.progress.close()

    def _loop(self) -> None:
        self.grader.start()
        idle_since: float | None = None  # when the judge last found no job to claim, since its last job
        while not self.stopping.is_set():
            try:
                job = self._claim()
            except Exception:
                log.exception("judge %s could not claim a job; retrying", self.slot.name)
                job = None
            if job is None:
                idle_since = idle_since or time.monotonic()
                if time.monotonic() - idle_since < BASELINE_IDLE_S or not self.use_idle_time():
                    self.wake.wait(min(self.settings.poll_seconds, BASELINE_IDLE_S))
                    self.wake.clear()
                continue
            idle_since = None
            self._grade(job)

    def _claim(self, only: int | None = None) -> ClaimedJob | None:
        lease = Lease(self.owner, self.settings.lease_seconds)
        with self.database.session() as session:
            preferred = self.built.ids() if self.built is not None and only is None else frozenset()
            return claim_next(session, lease, dict(self.slot.routes), self.settings.max_attempts, only=only,
                              preferred=preferred)

    def grade_delivered(self, evaluation_id: int) -> GradeOutcome:
        """Claim and grade the one job a broker delivered. A job that is done, leased by a live worker, or
        not ours to serve is skipped: that is how a task delivered twice is graded once."""
        job = self._claim(only=evaluation_id)
        if job is None:
            return GradeOutcome.SKIPPED
        return GradeOutcome.REQUEUED if self._grade(job) else GradeOutcome.GRADED

    def _grade(self, job: ClaimedJob) -> bool:
        """Grade and record; True if the job went back to the queue (a grader fault with attempts left)."""
        self.state.current, self.state.cpu_job = job.evaluation_id, job.problem.device_kind == "cpu"
        log.info("judge %s: evaluation %d (%s), attempt %d", self.slot.name, job.evaluation_id, job.problem.name,
                 job.attempt)
        try:
            return self._record(job, self._evaluate(job))
        except Exception:  # the database failed: the lease is no longer renewed, lapses, and the job is retried
            log.exception("judge %s: recording evaluation %d failed; it will be retried when its lease expires",
                          self.slot.name, job.evaluation_id)
            return False
        finally:
            self.state.current, self.state.timing = None, False

    def _evaluate(self, job: ClaimedJob) -> JobOutcome:
        """Never raises: a fault of the grader itself becomes verdict `error` (retried up to the cap)."""
        try:
            result: EvalResult = self.grader.evaluate(self.request_for(job), ProgressWriter(self, job))
        except Exception as exc:
            return grader_fault(exc, job.problem.name, job.problem.content_hash)
        return outcome_from_result(result)

    def request_for(self, job: ClaimedJob) -> EvalRequest:
        return self._request(job.problem, job.source, self._known_baseline(job))

    def _request(self, problem: ProblemRecord, source: str, known: CompiledBaseline | None = None) -> EvalRequest:
        spec = problem_spec(problem)
        device_index = self.slot.device_index if spec.device.value == "cuda" else 0
        return self.builder.build(spec, source, device_index, known)

    def use_idle_time(self) -> bool:
        """One piece of work for a judge with no job to claim: a due torch.compile baseline (evaluations wait for
        it), else a problem to prepare; False when there is none."""
        return self.measure_a_due_baseline() or self.prepare_a_problem()

    def prepare_a_problem(self) -> bool:
        """Prepare the newest problem this judge has not looked at in this process (worker/preparations.py);
        False when none is left or the judge keeps no trials. Never raises."""
        if not self.settings.prepare_problems or not self.grader.keeps_trials:
            return False
        try:
            problem = next_to_prepare(self.database, self.slot.serves, self.looked_at)
        except Exception:
            log.exception("judge %s could not look for problems to prepare", self.slot.name)
            return False
        if problem is None:
            return False
        self.looked_at.add(problem.id)
        try:
            done = self.grader.prepare(self._request(problem, ""))
        except Exception:  # the stored problem could not be read back: its evaluations will say so
            log.exception("judge %s: preparing %s failed", self.slot.name, problem.name)
            return True
        report(self.slot.name, self.slot.device_class, done)
        return True

    def measure_a_due_baseline(self) -> bool:
        """Measure one torch.compile baseline that graded evaluations wait for; False when none is due (or the
        deployment does not compare with torch.compile). Never raises: a grader fault is logged, and that
        baseline is left to the other judges for the rest of this process."""
        if not self.settings.measures_compiled_baseline:
            return False
        max_age = timedelta(hours=self.settings.compiled_baseline_max_age_hours)
        try:
            due = next_due(self.database, self.device_classes(), max_age, self.failed_baselines)
        except Exception:
            log.exception("judge %s could not look for due torch.compile baselines", self.slot.name)
            return False
        if due is None:
            return False
        self._measure_baseline(due)
        return True

    def _measure_baseline(self, due: DueBaseline) -> None:
        log.info("judge %s: measuring torch.compile of %s on %s, which graded evaluations wait for", self.slot.name,
                 due.problem.name, due.device_class)
        try:
            store(self.database, due, self.grader.measure_baseline(self._request(due.problem, "")))
        except Exception:
            log.exception("judge %s: measuring torch.compile of %s failed", self.slot.name, due.problem.name)
            self.failed_baselines.add((due.problem.id, due.device_class))

    def device_classes(self) -> set[str]:
        return {self.slot.device_class, *(device_class for _, device_class in self.slot.routes)}

    def device_class(self, job: ClaimedJob) -> str:
        """The class the claim recorded on the evaluation: the one this judge serves the job's key with."""
        return dict(self.slot.routes).get(job.requested_device, self.slot.device_class)

    def _known_baseline(self, job: ClaimedJob) -> CompiledBaseline | None:
        if not self.settings.measures_compiled_baseline:
            return None
        max_age = timedelta(hours=self.settings.compiled_baseline_max_age_hours)
        with self.database.session() as session:
            found = fresh_baseline(session, job.problem.id, self.device_class(job), torch.__version__, max_age,
                                   utcnow())
        return stored_baseline(found) if found is not None else None

    def _record(self, job: ClaimedJob, outcome: JobOutcome) -> bool:
        self.progress.flush()
        requeue = outcome.verdict == "error" and job.attempt < self.settings.max_attempts
        with self.database.session() as session:
            if requeue:
                kept = requeue_job(session, job.evaluation_id, self.owner,
                                   f"attempt {job.attempt}: {outcome.error_summary or 'grader error'}")
            else:
                kept = finish_job(session, job.evaluation_id, self.owner, outcome)
        if kept:
            log.info("judge %s: evaluation %d -> %s", self.slot.name, job.evaluation_id, outcome.verdict)
        else:
            log.warning("judge %s: lost the lease on evaluation %d; its result was discarded", self.slot.name,
                        job.evaluation_id)
        return requeue and kept


class ProgressWriter:
    """evaluate()'s progress callback: has the stage stored for GET /v1/submissions/{id}, at most every 0.5 s,
    by the judge's progress poster (the grading thread does not wait for the write)."""

    def __init__(self, judge: Judge, job: ClaimedJob) -> None:
        self.judge, self.job = judge, job
        self.last_stage: Stage | None = None
        self.last_write = 0.0

    def __call__(self, progress: Progress) -> None:
        self.judge.state.timing = progress.stage is Stage.TIMING
        now = time.monotonic()
        finished_step = progress.total > 0 and progress.done == progress.total
        if progress.stage == self.last_stage and now - self.last_write < PROGRESS_INTERVAL_S and not finished_step:
            return
        self.last_stage, self.last_write = progress.stage, now
        self.judge.progress.post(self.job, *progress_to_store(progress))
