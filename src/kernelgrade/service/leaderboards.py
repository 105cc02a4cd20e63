"""Leaderboards from stored verdicts. Suite boards follow KernelBench, per device class: fast_p is the
fraction of the suite's problems that device class can grade for which the model has a correct result with
speedup > p (fast_0 is the fraction solved correctly at all); the geometric mean is over the best correct
speedup of each solved problem."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from kernelgrade.service.context import ServiceContext
from kernelgrade.service.errors import not_found
from kernelgrade.service.schemas import (
    BoardEntryOut,
    ProblemBoardOut,
    SuiteBoardOut,
    SuiteDeviceOut,
    SuiteEntryOut,
)
from kernelgrade.storage.leaderboards import flagged_count, problem_board, suite_board_data
from kernelgrade.storage.problems import latest_problem, problem_version
from kernelgrade.storage.records import ModelProblemStats, SuiteProblem

FAST_P = (0.0, 0.5, 0.8, 1.0, 1.5, 2.0)
# The device kinds a problem can ask for; a device class's name starts with the kind it grades.
DEVICE_KINDS = ("cpu", "cuda")


def board_for_problem(context: ServiceContext, name: str, device: str | None, version: str | None,
                      limit: int) -> ProblemBoardOut:
    with context.database.session() as session:
        problem = problem_version(session, name, version) if version else latest_problem(session, name)
        if problem is None:
            raise not_found("problem_not_found", f"no problem named '{name}'" + (f" with version {version}"
                            if version else "") + "; GET /v1/problems lists them.")
        entries = problem_board(session, problem.id, device, limit)
        flagged = flagged_count(session, problem.id, device)
    rows = [BoardEntryOut(rank=rank, submitter=e.submitter, model=e.model, speedup=e.speedup,
                          speedup_vs_compiled=e.speedup_vs_compiled, submission_id=e.submission_id,
                          reference_median_ms=e.reference_median_ms, candidate_median_ms=e.candidate_median_ms,
                          device_class=e.device_class, finished_at=e.finished_at)
            for rank, e in enumerate(entries, start=1)]
    return ProblemBoardOut(problem=problem.name, version=problem.content_hash, device=device, entries=rows,
                           flagged_excluded=flagged)


def board_for_suite(context: ServiceContext, suite: str | None, device: str | None) -> SuiteBoardOut:
    """One row per model label and device class, each over the suite's problems that device class can grade:
    a CPU-only server's cpu-x86_64 results are not counted against the suite's cuda problems."""
    with context.database.session() as session:
        data = suite_board_data(session, suite, device)
    classes = [device] if device else sorted({s.device_class for s in data.stats})
    scopes = [device_scope(name, data.problems) for name in classes]
    entries = [suite_entry(model, scope, rows) for scope in scopes
               for model, rows in _by_model(data.stats, scope).items()]
    entries.sort(key=lambda e: (e.device_class, -e.fast_p["1"], -(e.geomean_speedup or 0.0), e.model))
    return SuiteBoardOut(suite=suite, device=device, problems=len(data.problems),
                         device_classes=[SuiteDeviceOut(device_class=s.device_class, device_kind=s.device_kind,
                                                        problems=len(s.problems)) for s in scopes],
                         entries=entries)


@dataclass(frozen=True)
class DeviceScope:
    """A device class and the suite's problems it can grade."""

    device_class: str
    device_kind: str | None
    problems: frozenset[str]


def grading_kind(device_class: str) -> str | None:
    """The problems' device kind a device class grades: `cpu-x86_64` the cpu ones, `cuda-h100` the cuda ones
    (a GPU host grades cpu problems too, but under its cpu class). None where the name says neither."""
    kind = device_class.split("-", 1)[0]
    return kind if kind in DEVICE_KINDS else None


def device_scope(device_class: str, problems: Sequence[SuiteProblem]) -> DeviceScope:
    kind = grading_kind(device_class)
    names = frozenset(p.name for p in problems if kind is None or p.device_kind == kind)
    return DeviceScope(device_class, kind, names)


def _by_model(stats: Sequence[ModelProblemStats], scope: DeviceScope) -> dict[str, list[ModelProblemStats]]:
    rows: dict[str, list[ModelProblemStats]] = defaultdict(list)
    for row in stats:
        if row.device_class == scope.device_class and row.problem_name in scope.problems:
            rows[row.model].append(row)
    return rows


def suite_entry(model: str, scope: DeviceScope, rows: Sequence[ModelProblemStats]) -> SuiteEntryOut:
    bests = [r.best_speedup for r in rows if r.best_speedup is not None]
    finished, correct = sum(r.finished for r in rows), sum(r.correct for r in rows)
    count = len(scope.problems)
    return SuiteEntryOut(
        model=model, device_class=scope.device_class, problems=count,
        fast_p={_label(p): fast_p(bests, count, p) for p in FAST_P}, geomean_speedup=geometric_mean(bests),
        correct_rate=correct / finished if finished else 0.0, solved_problems=len(bests), evaluations=finished)


def fast_p(best_speedups: list[float], problem_count: int, p: float) -> float:
    if problem_count == 0:
        return 0.0
    return sum(1 for s in best_speedups if s > p) / problem_count


def geometric_mean(values: list[float]) -> float | None:
    positive = [v for v in values if v > 0]
    if not positive:
        return None
    return math.exp(sum(math.log(v) for v in positive) / len(positive))


def _label(p: float) -> str:
    return f"{p:g}"

