"""torch.compile baselines: one measurement per problem version, device class and torch version, reused by
later evaluations while it is younger than the configured age.

A failed measurement (inductor could not compile the reference) is stored and found like a measured one,
so a problem that torch.compile cannot handle costs one attempt per age period, not one per job.

Measuring is off the verdict's path: an evaluation graded while its problem had no fresh baseline is recorded
without one, and is what makes that baseline due (baselines_due) for an idle judge of its device class; once
measured, fill_compiled_speedups gives each such evaluation (and its leaderboard entry) the baseline and its
speedup against it.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, exists, func, select, update
from sqlalchemy.orm import InstrumentedAttribute, Session

from kernelgrade.storage.models import BoardEntryRow, CompiledBaselineRow, EvaluationRow
from kernelgrade.storage.records import BaselineRecord


def fresh_baseline(session: Session, problem_id: int, device_class: str, torch: str, max_age: timedelta,
                   now: datetime) -> BaselineRecord | None:
    """The newest baseline of this problem version on this device class under this torch version measured
    after now - max_age, or None."""
    row = session.scalars(
        select(CompiledBaselineRow)
        .where(*_fresh(problem_id, device_class, torch, now - max_age))
        .order_by(CompiledBaselineRow.measured_at.desc(), CompiledBaselineRow.id.desc())
        .limit(1)).first()
    if row is None:
        return None
    return BaselineRecord(torch=row.torch_version, status=row.status, median_ms=row.median_ms,
                          measured_at=row.measured_at, data=row.baseline)


def _fresh(problem_id: int | InstrumentedAttribute[int], device_class: str | InstrumentedAttribute[str | None],
           torch: str, since: datetime) -> list[ColumnElement[bool]]:
    """A stored baseline of this problem version and device class under this torch, measured since: the one
    test for whether a baseline is fresh, for a given problem or correlated with an evaluation row's."""
    return [CompiledBaselineRow.problem_id == problem_id, CompiledBaselineRow.device_class == device_class,
            CompiledBaselineRow.torch_version == torch, CompiledBaselineRow.measured_at > since]


def record_baseline(session: Session, problem_id: int, device_class: str, baseline: BaselineRecord) -> None:
    """Store a new measurement, in the caller's transaction. Earlier ones stay: the newest is the one used."""
    session.add(CompiledBaselineRow(problem_id=problem_id, device_class=device_class, torch_version=baseline.torch,
                                    status=baseline.status, median_ms=baseline.median_ms,
                                    measured_at=baseline.measured_at, baseline=baseline.data))
    session.flush()


# Verdicts whose evaluations carry a speedup, and so one against torch.compile.
TIMED_VERDICTS = ("correct", "flagged")


def _waiting(torch: str) -> list[ColumnElement[bool]]:
    """Evaluations graded without a compiled speedup that one could be computed for."""
    return [EvaluationRow.status == "done", EvaluationRow.verdict.in_(TIMED_VERDICTS),
            EvaluationRow.candidate_median_ms.is_not(None), EvaluationRow.speedup_vs_compiled.is_(None),
            EvaluationRow.torch_version == torch]


def baselines_due(session: Session, device_classes: list[str], torch: str, max_age: timedelta,
                  now: datetime) -> list[tuple[int, str]]:
    """(problem version, device class) pairs, longest waiting first, that evaluations graded within the age on
    one of `device_classes` under this torch wait for: none fresh is stored, measured or failed."""
    since = now - max_age
    rows = session.execute(
        select(EvaluationRow.problem_id, EvaluationRow.device_class)
        .where(*_waiting(torch), EvaluationRow.finished_at > since, EvaluationRow.device_class.in_(device_classes),
               ~exists().where(*_fresh(EvaluationRow.problem_id, EvaluationRow.device_class, torch, since)))
        .group_by(EvaluationRow.problem_id, EvaluationRow.device_class)
        .order_by(func.min(EvaluationRow.finished_at))).all()
    return [(row.problem_id, str(row.device_class)) for row in rows]


def fill_compiled_speedups(session: Session, problem_id: int, device_class: str, baseline: BaselineRecord) -> int:
    """Give the evaluations waiting for this baseline its record in their results and, where it was measured,
    their speedup against it (their leaderboard entries too); returns how many were filled."""
    rows = session.scalars(select(EvaluationRow).where(
        EvaluationRow.problem_id == problem_id, EvaluationRow.device_class == device_class,
        *_waiting(baseline.torch))).all()
    for row in rows:
        speedup = (baseline.median_ms / row.candidate_median_ms
                   if baseline.median_ms and row.candidate_median_ms else None)
        row.speedup_vs_compiled = speedup
        row.result = {**(row.result or {}), "compiled_baseline": baseline.data, "compiled_baseline_reused": True,
                      "compiled_baseline_pending": False, "speedup_vs_compiled": speedup}
        if speedup is not None:
            session.execute(update(BoardEntryRow).where(
                BoardEntryRow.submission_id == row.submission_id, BoardEntryRow.problem_id == problem_id,
                BoardEntryRow.device_class == device_class).values(speedup_vs_compiled=speedup))
    session.flush()
    return len(rows)
