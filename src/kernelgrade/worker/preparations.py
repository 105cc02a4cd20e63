"""Problems prepared while the judges have nothing to grade (evaluator/judge/prepare.py).

A problem is due from the moment it is in the catalogue (posted, imported, or first submitted to): a judge
with no job to claim prepares the newest one it has not yet looked at, one problem at a time, so that a job
posted meanwhile waits for one problem's preparation at most. What a problem's preparation left is on the
host's disk: a restarted judge asks again, and the evaluator answers at once for the ones finished before.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from kernelgrade.evaluator import Preparation
from kernelgrade.storage.database import Database
from kernelgrade.storage.problems import latest_problems_for
from kernelgrade.storage.records import ProblemRecord

log = logging.getLogger(__name__)


def next_to_prepare(database: Database, device_kinds: Iterable[str], looked_at: set[int]) -> ProblemRecord | None:
    """The newest problem version graded on one of `device_kinds` that is not in `looked_at`."""
    with database.session() as session:
        found = latest_problems_for(session, device_kinds, looked_at)
    return found[0] if found else None


def report(judge: str, device_class: str, done: Preparation) -> None:
    if done.note == "prepared before":
        return
    log.info("judge %s prepared %s on %s: %d trial(s), %d computed, %s, in %.1f s%s", judge, done.problem,
             device_class, done.trials, done.computed, "reference timed" if done.reference_timed else "not timed",
             done.seconds, f" ({done.note})" if done.note else "")
