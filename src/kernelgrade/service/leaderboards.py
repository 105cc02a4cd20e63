"""Leaderboards from stored verdicts. Suite boards follow KernelBench: fast_p is the fraction of the
suite's problems for which the model has a correct result with speedup > p (fast_0 is the fraction solved
correctly at all); the geometric mean is over the best correct speedup of each solved problem."""

from __future__ import annotations

import math
from collections import defaultdict

from kernelgrade.service.context import ServiceContext
from kernelgrade.service.errors import not_found
from kernelgrade.service.schemas import BoardEntryOut, ProblemBoardOut, SuiteBoardOut, SuiteEntryOut
from kernelgrade.storage.leaderboards import flagged_count, problem_board, suite_board_data
from kernelgrade.storage.problems import latest_problem, problem_version
from kernelgrade.storage.records import ModelCounts

FAST_P = (0.0, 0.5, 0.8, 1.0, 1.5, 2.0)


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
    with context.database.session() as session:
        data = suite_board_data(session, suite, device)
    bests: dict[str, list[float]] = defaultdict(list)
    for best in data.bests:
        if best.best_speedup is not None:
            bests[best.model].append(best.best_speedup)
    entries = [suite_entry(counts, bests[counts.model], len(data.problem_names)) for counts in data.counts]
    entries.sort(key=lambda e: (-e.fast_p["1"], -(e.geomean_speedup or 0.0), e.model))
    return SuiteBoardOut(suite=suite, device=device, problems=len(data.problem_names), entries=entries)


def suite_entry(counts: ModelCounts, best_speedups: list[float], problem_count: int) -> SuiteEntryOut:
    return SuiteEntryOut(
        model=counts.model,
        fast_p={_label(p): fast_p(best_speedups, problem_count, p) for p in FAST_P},
        geomean_speedup=geometric_mean(best_speedups), correct_rate=counts.correct / counts.finished if counts.finished
        else 0.0, solved_problems=len(best_speedups), evaluations=counts.finished)


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

