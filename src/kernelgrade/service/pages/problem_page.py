"""The problem page: reference source, shapes, precision policy, measured baselines and the speedups of
every correct submission."""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from kernelgrade.service.context import ServiceContext
from kernelgrade.service.errors import not_found
from kernelgrade.service.pages.svg_plots import FAST_P_THRESHOLDS, speedup_distribution
from kernelgrade.service.views import problem_out
from kernelgrade.storage.page_data import ReferenceMedian, correct_speedups, reference_medians
from kernelgrade.storage.problems import latest_problem
from kernelgrade.storage.workers import device_memory_by_class


@dataclass(frozen=True)
class Baseline:
    device_class: str
    runs: int
    median_ms: float
    low_ms: float
    high_ms: float


def baselines(measured: list[ReferenceMedian]) -> list[Baseline]:
    """Per device class: the median of the reference medians measured beside each graded submission."""
    by_device: dict[str, list[float]] = defaultdict(list)
    for m in measured:
        by_device[m.device_class].append(m.median_ms)
    return [Baseline(device, len(values), statistics.median(values), min(values), max(values))
            for device, values in sorted(by_device.items())]


def problem_page(context: ServiceContext, name: str) -> dict[str, Any]:
    with context.database.session() as session:
        problem = latest_problem(session, name)
        if problem is None:
            raise not_found("problem_not_found", f"no problem named '{name}'")
        speedups = correct_speedups(session, problem.id)
        measured = reference_medians(session, problem.id)
        device_memory = device_memory_by_class(session)
    return {"problem": problem_out(problem, device_memory), "baselines": baselines(measured),
            "speedups": speedups, "plot": speedup_distribution(speedups) if speedups else "",
            "thresholds": FAST_P_THRESHOLDS,
            "fast_p": {f"{p:g}": sum(1 for s in speedups if s > p) for p in FAST_P_THRESHOLDS}}
