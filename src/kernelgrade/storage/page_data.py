"""The read-only queries behind the web pages that the JSON API does not already make: queue depth,
device classes seen, and per-problem measurements (speedups of correct results, reference medians)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import func, select, union
from sqlalchemy.orm import Session

from kernelgrade.storage.models import EvaluationRow, ModelStatsRow, WorkerRow
from kernelgrade.storage.records import UNFINISHED, EvaluatorJson

CORRECT = "correct"


@dataclass(frozen=True)
class ReferenceMedian:
    device_class: str
    median_ms: float


def queue_depth(session: Session) -> int:
    """Evaluations not yet finished (queued, compiling or running)."""
    query = select(func.count(EvaluationRow.id)).where(EvaluationRow.status.in_(UNFINISHED))
    return int(session.execute(query).scalar_one())


def device_classes(session: Session) -> list[str]:
    """Every device class that has results or a registered judge."""
    query = union(select(ModelStatsRow.device_class), select(WorkerRow.device_class))
    return sorted(str(name) for name in session.scalars(query))


def correct_speedups(session: Session, problem_id: int, device: str | None = None) -> list[float]:
    query = select(EvaluationRow.speedup).where(EvaluationRow.problem_id == problem_id,
                                                EvaluationRow.verdict == CORRECT, EvaluationRow.speedup.is_not(None))
    if device:
        query = query.where(EvaluationRow.device_class == device)
    return [float(s) for s in session.scalars(query.order_by(EvaluationRow.id)) if s is not None]


def reference_medians(session: Session, problem_id: int) -> list[ReferenceMedian]:
    """The reference's median time as measured beside each graded submission, oldest first."""
    query = (select(EvaluationRow.device_class, EvaluationRow.reference_median_ms)
             .where(EvaluationRow.problem_id == problem_id, EvaluationRow.reference_median_ms.is_not(None))
             .order_by(EvaluationRow.id))
    return [ReferenceMedian(device or "unknown", float(ms)) for device, ms in session.execute(query)
            if ms is not None]


def results_of(session: Session, submission_ids: Sequence[int]) -> dict[int, EvaluatorJson]:
    """The stored result of the newest finished evaluation of each submission (for confidence intervals)."""
    query = (select(EvaluationRow.submission_id, EvaluationRow.result)
             .where(EvaluationRow.submission_id.in_(list(submission_ids)), EvaluationRow.result.is_not(None))
             .order_by(EvaluationRow.id))
    return {submission_id: result for submission_id, result in session.execute(query) if result}
