"""The queries behind leaderboards, over the tables board_tables.py maintains. Only `correct` results
count; flagged ones are counted so a board can say how many it left off."""

from __future__ import annotations

from sqlalchemy import ColumnElement, func, select, true
from sqlalchemy.orm import Session

from kernelgrade.storage.models import BoardEntryRow, ModelStatsRow, ProblemRow
from kernelgrade.storage.records import BoardEntry, ModelCounts, ModelProblemBest, SuiteBoardData


def _entry_device(device: str | None) -> ColumnElement[bool]:
    return BoardEntryRow.device_class == device if device else true()


def _stats_device(device: str | None) -> ColumnElement[bool]:
    return ModelStatsRow.device_class == device if device else true()


def problem_board(session: Session, problem_id: int, device: str | None, limit: int) -> list[BoardEntry]:
    """The best correct speedup of each (submitter, model), fastest first (over all device classes unless
    `device` names one). Rows come fastest first from the index; a (submitter, model) already seen on
    another device class is skipped, which is cheaper than a window function over every entry."""
    entries = BoardEntryRow
    query = (select(entries.submitter, entries.model, entries.best_speedup, entries.submission_id,
                    entries.reference_median_ms, entries.candidate_median_ms, entries.device_class,
                    entries.finished_at, entries.speedup_vs_compiled)
             .where(entries.problem_id == problem_id, _entry_device(device))
             .order_by(entries.best_speedup.desc(), entries.submission_id))
    if device:  # one row per (submitter, model) per device class
        query = query.limit(limit)
    board: list[BoardEntry] = []
    seen: set[tuple[str, str]] = set()
    result = session.execute(query.execution_options(yield_per=max(limit, 100)))
    try:
        for row in result:
            if (row.submitter, row.model) not in seen and len(board) < limit:
                seen.add((row.submitter, row.model))
                board.append(BoardEntry(*row))
            if len(board) >= limit:
                break
    finally:
        result.close()
    return board


def flagged_count(session: Session, problem_id: int, device: str | None) -> int:
    query = select(func.coalesce(func.sum(ModelStatsRow.flagged), 0)).where(
        ModelStatsRow.problem_id == problem_id, _stats_device(device))
    return int(session.execute(query).scalar_one())


def suite_board_data(session: Session, suite: str | None, device: str | None) -> SuiteBoardData:
    """Per model label: the best correct speedup on each latest problem of the suite, and result counts."""
    problems = select(ProblemRow.id, ProblemRow.name).where(ProblemRow.is_latest)
    if suite is not None:
        problems = problems.where(ProblemRow.suite == suite)
    names: dict[int, str] = dict(session.execute(problems).all())
    if not names:
        return SuiteBoardData((), (), ())
    stats = ModelStatsRow
    query = (select(stats.model, stats.problem_id, func.sum(stats.finished), func.sum(stats.correct),
                    func.max(stats.best_speedup))
             .where(stats.problem_id.in_(list(names)), _stats_device(device))
             .group_by(stats.model, stats.problem_id))
    bests: list[ModelProblemBest] = []
    totals: dict[str, tuple[int, int]] = {}
    for model, problem_id, finished, correct, best in session.execute(query):
        bests.append(ModelProblemBest(model, names[problem_id], best))
        done, ok = totals.get(model, (0, 0))
        totals[model] = (done + int(finished), ok + int(correct))
    counts = tuple(ModelCounts(model, done, ok) for model, (done, ok) in sorted(totals.items()))
    return SuiteBoardData(tuple(sorted(names.values())), tuple(bests), counts)
