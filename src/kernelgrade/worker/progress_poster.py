"""A judge's progress rows, written by a thread of their own rather than the grading thread.

evaluate() reports every stage and step, and the judge stores the latest for GET /v1/submissions/{id}.
Written inline, each report was a database transaction on the grading thread: six or more per job outside
any stage, and some between the timed phases, with the device idle meanwhile; on a remote Postgres each is a
network round trip. The judge posts the update here and goes on. An update that a newer one overtakes before
it is written is dropped: only the latest stage is worth showing.
"""

from __future__ import annotations

import logging
import threading

from kernelgrade.storage.database import Database
from kernelgrade.storage.jobs import record_progress
from kernelgrade.storage.records import ClaimedJob, JobStatus, ProgressUpdate

log = logging.getLogger(__name__)

# flush() waits at most this long: a database that has not taken one small update in this time will not take
# the result that follows any faster, and the result's own write has its own retry path (the lease).
FLUSH_S = 10.0

# What is waiting to be written: the job (its id and lease owner), its status and where it is.
_Pending = tuple[ClaimedJob, JobStatus, ProgressUpdate]


class ProgressPoster:
    def __init__(self, database: Database) -> None:
        self.database = database
        self._pending: _Pending | None = None
        self._writing = False
        self._closed = False
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    def post(self, job: ClaimedJob, status: JobStatus, update: ProgressUpdate) -> None:
        """Have `update` written soon, replacing any update not yet written."""
        with self._changed:
            self._pending = (job, status, update)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="progress-poster", daemon=True)
                self._thread.start()
            self._changed.notify_all()

    def flush(self) -> None:
        """Wait until every update posted so far is written: called before the job's result is, so that the
        finished row shows the job's last stage."""
        with self._changed:
            self._changed.wait_for(lambda: self._pending is None and not self._writing, FLUSH_S)

    def close(self) -> None:
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def _run(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self._pending is not None or self._closed)
                if self._pending is None:
                    return
                pending, self._pending, self._writing = self._pending, None, True
            try:
                self._write(*pending)
            finally:
                with self._changed:
                    self._writing = False
                    self._changed.notify_all()

    def _write(self, job: ClaimedJob, status: JobStatus, update: ProgressUpdate) -> None:
        try:
            with self.database.session() as session:
                record_progress(session, job.evaluation_id, job.owner, status, update)
        except Exception:  # progress is informational; grading goes on
            log.warning("could not record progress of evaluation %d", job.evaluation_id, exc_info=True)
