"""A judge's progress rows are written off the grading thread: a slow write delays the row, not the grading."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from kernelgrade.evaluator import Progress, Stage
from kernelgrade.storage.database import Database
from kernelgrade.storage.jobs import Lease, claim_next
from kernelgrade.storage.records import ClaimedJob, JobStatus, ProgressUpdate
from kernelgrade.storage.submissions import get_submission
from kernelgrade.worker import progress_poster
from kernelgrade.worker.job_outcome import progress_to_store
from kernelgrade.worker.progress_poster import ProgressPoster
from tests.storage.builders import CPU_ROUTES, add_problem, add_submission

# How long a post may take at most: far below the write it must not wait for, which blocks until released.
RETURNS_WITHIN_S = 0.5
# Long enough for a write that is not held back to land, if flush() failed to wait for it.
UNHELD_WRITE_S = 0.3


def _claimed(database: Database) -> ClaimedJob:
    view = add_submission(database, add_problem(database))
    with database.session() as session:
        job = claim_next(session, Lease("judge", 60.0), CPU_ROUTES, 3)
    assert job is not None and job.submission_id == view.submission.id
    return job


def _stage(database: Database, job: ClaimedJob) -> str | None:
    with database.session() as session:
        view = get_submission(session, job.submission_id)
    assert view is not None and view.evaluation is not None
    progress = view.evaluation.progress
    return progress.stage if progress is not None else None


def _held_writes(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, list[str]]:
    """Every write waits for the returned event; the stages written are listed, in order."""
    release, written = threading.Event(), []
    real: Callable[..., bool] = progress_poster.record_progress

    def held(session, evaluation_id, owner, status, update):  # type: ignore[no-untyped-def]
        release.wait(30)
        written.append(update.stage)
        return real(session, evaluation_id, owner, status, update)

    monkeypatch.setattr(progress_poster, "record_progress", held)
    return release, written


def _post(poster: ProgressPoster, job: ClaimedJob, stage: str) -> float:
    started = time.monotonic()
    poster.post(job, JobStatus.RUNNING, ProgressUpdate(stage, stage))
    return time.monotonic() - started


def test_a_post_returns_before_its_write_and_flush_waits_for_it(database: Database,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    job = _claimed(database)
    release, written = _held_writes(monkeypatch)
    poster = ProgressPoster(database)
    assert _post(poster, job, "load") < RETURNS_WITHIN_S
    flushed = threading.Thread(target=poster.flush)
    flushed.start()
    flushed.join(UNHELD_WRITE_S)
    assert flushed.is_alive() and _stage(database, job) is None  # the write is still held back
    release.set()
    flushed.join(30)
    assert not flushed.is_alive() and written == ["load"] and _stage(database, job) == "load"
    poster.close()


def test_an_update_overtaken_before_its_write_is_dropped(database: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    job = _claimed(database)
    release, written = _held_writes(monkeypatch)
    poster = ProgressPoster(database)
    _post(poster, job, "load")
    deadline = time.monotonic() + 30
    while poster._pending is not None and time.monotonic() < deadline:  # the first write is under way
        time.sleep(0.01)
    assert _post(poster, job, "correctness") < RETURNS_WITHIN_S
    assert _post(poster, job, "timing") < RETURNS_WITHIN_S
    release.set()
    poster.flush()
    assert written == ["load", "timing"] and _stage(database, job) == "timing"
    poster.close()


def _status(database: Database, job: ClaimedJob) -> tuple[str, str | None, int, int]:
    with database.session() as session:
        view = get_submission(session, job.submission_id)
    assert view is not None and view.evaluation is not None and view.evaluation.progress is not None
    progress = view.evaluation.progress
    return view.evaluation.status.value, progress.stage, progress.done, progress.total


def test_evaluate_s_reports_are_stored_as_compiling_until_the_submission_runs(database: Database) -> None:
    job = _claimed(database)
    poster = ProgressPoster(database)
    poster.post(job, *progress_to_store(Progress(Stage.COMPILE, "building the extension")))
    poster.flush()
    assert _status(database, job) == ("compiling", "compile", 0, 0)
    poster.post(job, *progress_to_store(Progress(Stage.CORRECTNESS, "checking correctness", 2, 5)))
    poster.flush()
    assert _status(database, job) == ("running", "correctness", 2, 5)
    poster.close()
