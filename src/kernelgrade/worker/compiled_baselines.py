"""torch.compile baselines, measured off the verdict's path.

A verdict never waits for one: an evaluation graded while its problem version had no fresh baseline on its
device class is recorded without it (its result says pending), and that waiting evaluation is what makes the
baseline due. A judge with no job to claim measures one due baseline of its device classes (the oldest wait
first), stores it, and fills in speedup_vs_compiled of every evaluation that waited for it. Everything it
needs is in the database, so any judge of the class, after any restart, finds the same work.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta

import torch

from kernelgrade.evaluator import CompiledBaseline
from kernelgrade.storage.baselines import baselines_due, fill_compiled_speedups, record_baseline
from kernelgrade.storage.clock import utcnow
from kernelgrade.storage.database import Database
from kernelgrade.storage.problems import problem_by_id
from kernelgrade.storage.records import ProblemRecord
from kernelgrade.worker.job_outcome import baseline_to_store

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DueBaseline:
    problem: ProblemRecord
    device_class: str


def next_due(database: Database, device_classes: Iterable[str], max_age: timedelta,
             skipped: set[tuple[int, str]]) -> DueBaseline | None:
    """The baseline waited for longest on one of `device_classes`, leaving out `skipped` (those whose
    measurement failed for the grader's own reasons in this process)."""
    with database.session() as session:
        for problem_id, device_class in baselines_due(session, sorted(set(device_classes)), torch.__version__,
                                                      max_age, utcnow()):
            problem = problem_by_id(session, problem_id)
            if problem is not None and (problem_id, device_class) not in skipped:
                return DueBaseline(problem, device_class)
    return None


def store(database: Database, due: DueBaseline, baseline: CompiledBaseline) -> int:
    """Record the baseline and fill in the evaluations that waited for it; returns how many were filled."""
    record = baseline_to_store(baseline)
    with database.session() as session:
        record_baseline(session, due.problem.id, due.device_class, record)
        filled = fill_compiled_speedups(session, due.problem.id, due.device_class, record)
    log.info("torch.compile of %s on %s: %s; filled in %d evaluation(s)", due.problem.name, due.device_class,
             baseline.status.value, filled)
    return filled
