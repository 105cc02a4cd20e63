"""The leaderboard pages: per problem (with a 95% interval on each speedup) and per suite (fast_p)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kernelgrade.service.context import ServiceContext
from kernelgrade.service.leaderboards import FAST_P, board_for_problem, board_for_suite
from kernelgrade.service.schemas import BoardEntryOut, SpeedupIntervalOut, SuiteDeviceOut
from kernelgrade.service.stored_result import StoredResult
from kernelgrade.storage.page_data import device_classes, results_of

BOARD_LIMIT = 100


@dataclass(frozen=True)
class BoardRow:
    entry: BoardEntryOut
    interval: SpeedupIntervalOut | None


def problem_leaderboard(context: ServiceContext, name: str, device: str | None) -> dict[str, Any]:
    board = board_for_problem(context, name, device or None, None, BOARD_LIMIT)
    with context.database.session() as session:
        results = results_of(session, [e.submission_id for e in board.entries])
        devices = device_classes(session)
    rows = [BoardRow(e, StoredResult.read(results.get(e.submission_id)).speedup_interval())
            for e in board.entries]
    return {"board": board, "rows": rows, "devices": devices, "device": device or ""}


def suite_leaderboard(context: ServiceContext, suite: str | None, device: str | None) -> dict[str, Any]:
    board = board_for_suite(context, suite or None, device or None)
    with context.database.session() as session:
        devices = device_classes(session)
    return {"board": board, "fast_p": [f"{p:g}" for p in FAST_P], "devices": devices, "device": device or "",
            "suite": suite or "", "scopes": [scope_words(d, board.problems) for d in board.device_classes]}


def scope_words(scope: SuiteDeviceOut, total: int) -> str:
    """Which of the suite's problems a device class is scored over, e.g. `cpu-x86_64 grades 10 of the 45
    problems, the cpu ones (the other 35 need another device class)`."""
    if scope.problems == total:
        return f"{scope.device_class} grades all {total} problem(s)"
    return (f"{scope.device_class} grades {scope.problems} of the {total} problems, the {scope.device_kind} ones"
            f" (the other {total - scope.problems} need another device class)")
