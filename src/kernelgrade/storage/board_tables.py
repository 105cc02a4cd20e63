"""Keeping board_entries and model_stats in step with finished evaluations.

record_finished() runs in the same transaction as the conditional UPDATE that finishes a job, so each
result is counted exactly once; it uses INSERT ... ON CONFLICT DO UPDATE (SQLite and Postgres both have
it), so concurrent judges finishing results of the same submitter and model cannot lose an update.
rebuild() recomputes both tables from the evaluations (after a bulk import, or to repair them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, case, delete, func, insert, literal_column, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from kernelgrade.storage.models import BoardEntryRow, EvaluationRow, ModelStatsRow, SubmissionRow

CORRECT, FLAGGED = "correct", "flagged"
UNKNOWN_DEVICE = "unknown"


def record_finished(session: Session, evaluation_id: int) -> None:
    row = session.execute(
        select(EvaluationRow.problem_id, EvaluationRow.device_class, EvaluationRow.verdict, EvaluationRow.speedup,
               EvaluationRow.reference_median_ms, EvaluationRow.candidate_median_ms, EvaluationRow.finished_at,
               EvaluationRow.submission_id, EvaluationRow.speedup_vs_compiled, SubmissionRow.submitter,
               SubmissionRow.model)
        .join(SubmissionRow, SubmissionRow.id == EvaluationRow.submission_id)
        .where(EvaluationRow.id == evaluation_id)).one()
    device = row.device_class or UNKNOWN_DEVICE
    best = row.speedup if row.verdict == CORRECT else None
    _upsert_stats(session, {"problem_id": row.problem_id, "device_class": device, "model": row.model, "finished": 1,
                            "correct": int(row.verdict == CORRECT), "flagged": int(row.verdict == FLAGGED),
                            "best_speedup": best})
    if best is not None:
        _upsert_entry(session, {"problem_id": row.problem_id, "device_class": device, "submitter": row.submitter,
                                "model": row.model, "best_speedup": best, "submission_id": row.submission_id,
                                "reference_median_ms": row.reference_median_ms,
                                "candidate_median_ms": row.candidate_median_ms, "finished_at": row.finished_at,
                                "speedup_vs_compiled": row.speedup_vs_compiled})


def _insert(session: Session, table: type[Any]) -> Any:
    dialect = session.get_bind().dialect.name
    return (postgresql.insert(table) if dialect == "postgresql" else sqlite.insert(table))


def _better(new: Any, old: Any) -> ColumnElement[bool]:
    better: ColumnElement[bool] = new.is_not(None) & (old.is_(None) | (new > old))
    return better


def _upsert_stats(session: Session, values: dict[str, Any]) -> None:
    statement = _insert(session, ModelStatsRow).values(**values)
    new, table = statement.excluded, ModelStatsRow
    session.execute(statement.on_conflict_do_update(
        index_elements=["problem_id", "device_class", "model"],
        set_={"finished": table.finished + new.finished, "correct": table.correct + new.correct,
              "flagged": table.flagged + new.flagged,
              "best_speedup": case((_better(new.best_speedup, table.best_speedup), new.best_speedup),
                                   else_=table.best_speedup)}))


def _upsert_entry(session: Session, values: dict[str, Any]) -> None:
    statement = _insert(session, BoardEntryRow).values(**values)
    new, table = statement.excluded, BoardEntryRow
    better = _better(new.best_speedup, table.best_speedup)
    columns = ("best_speedup", "submission_id", "reference_median_ms", "candidate_median_ms", "finished_at",
               "speedup_vs_compiled")
    session.execute(statement.on_conflict_do_update(
        index_elements=["problem_id", "device_class", "submitter", "model"],
        set_={c: case((better, getattr(new, c)), else_=getattr(table, c)) for c in columns}))


def rebuild(session: Session, problem_ids: Sequence[int]) -> None:
    """Recompute both tables for these problems from their finished evaluations."""
    ids = list(problem_ids)
    session.execute(delete(BoardEntryRow).where(BoardEntryRow.problem_id.in_(ids)))
    session.execute(delete(ModelStatsRow).where(ModelStatsRow.problem_id.in_(ids)))
    session.execute(insert(ModelStatsRow).from_select(
        ["problem_id", "device_class", "model", "finished", "correct", "flagged", "best_speedup"], _stats_query(ids)))
    session.execute(insert(BoardEntryRow).from_select(
        ["problem_id", "device_class", "submitter", "model", "best_speedup", "submission_id", "reference_median_ms",
         "candidate_median_ms", "finished_at", "speedup_vs_compiled"], _entries_query(ids)))


def _device() -> ColumnElement[str]:
    # Inline, not a bind parameter: Postgres must see the same expression in SELECT and GROUP BY.
    return func.coalesce(EvaluationRow.device_class, literal_column(f"'{UNKNOWN_DEVICE}'"))


def _stats_query(ids: list[int]) -> Any:
    def count(verdict: str) -> Any:
        return func.sum(case((EvaluationRow.verdict == verdict, 1), else_=0))

    best = func.max(case((EvaluationRow.verdict == CORRECT, EvaluationRow.speedup), else_=None))
    return (select(EvaluationRow.problem_id, _device(), SubmissionRow.model, func.count(EvaluationRow.id),
                   count(CORRECT), count(FLAGGED), best)
            .join(SubmissionRow, SubmissionRow.id == EvaluationRow.submission_id)
            .where(EvaluationRow.problem_id.in_(ids), EvaluationRow.status == "done")
            .group_by(EvaluationRow.problem_id, _device(), SubmissionRow.model))


def _entries_query(ids: list[int]) -> Any:
    rank = func.row_number().over(
        partition_by=(EvaluationRow.problem_id, _device(), SubmissionRow.submitter, SubmissionRow.model),
        order_by=(EvaluationRow.speedup.desc(), EvaluationRow.id)).label("rank")
    ranked = (select(EvaluationRow.problem_id, _device().label("device_class"), SubmissionRow.submitter,
                     SubmissionRow.model, EvaluationRow.speedup, EvaluationRow.submission_id,
                     EvaluationRow.reference_median_ms, EvaluationRow.candidate_median_ms, EvaluationRow.finished_at,
                     EvaluationRow.speedup_vs_compiled, rank)
              .join(SubmissionRow, SubmissionRow.id == EvaluationRow.submission_id)
              .where(EvaluationRow.problem_id.in_(ids), EvaluationRow.verdict == CORRECT,
                     EvaluationRow.speedup.is_not(None))
              .subquery())
    return select(*(c for c in ranked.c if c.name != "rank")).where(ranked.c.rank == 1)
