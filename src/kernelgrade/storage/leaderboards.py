"""The queries behind leaderboards, over the tables board_tables.py maintains. Only `correct` results
count; flagged ones are counted so a board can say how many it left off."""

from __future__ import annotations

from sqlalchemy import ColumnElement, func, select, true
from sqlalchemy.orm import Session

from kernelgrade.storage.models import BoardEntryRow, ModelStatsRow, ProblemRow
from kernelgrade.storage.records import BoardEntry, ModelProblemStats, SuiteBoardData, SuiteProblem


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
    """The latest problems of the suite with their device kinds, and per model label, device class and problem:
    result counts and the best correct speedup (on `device` only, where it names a device class)."""
    problems = select(ProblemRow.id, ProblemRow.name, ProblemRow.device_kind).where(ProblemRow.is_latest)
    if suite is not None:
        problems = problems.where(ProblemRow.suite == suite)
    found = {id_: SuiteProblem(name, kind) for id_, name, kind in session.execute(problems).all()}
    if not found:
        return SuiteBoardData((), ())
    stats = ModelStatsRow  # one row per (problem, device class, model): its key
    query = (select(stats.model, stats.device_class, stats.problem_id, stats.finished, stats.correct,
                    stats.best_speedup)
             .where(stats.problem_id.in_(list(found)), _stats_device(device)))
    rows = [ModelProblemStats(model, device_class, found[problem_id].name, finished, correct, best)
            for model, device_class, problem_id, finished, correct, best in session.execute(query)]
    rows.sort(key=lambda r: (r.device_class, r.model, r.problem_name))
    return SuiteBoardData(tuple(sorted(found.values(), key=lambda p: p.name)), tuple(rows))
