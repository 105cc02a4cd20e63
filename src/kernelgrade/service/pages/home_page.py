"""The home page: suites and their problems, device classes, recent activity, queue depth, live judges."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from kernelgrade.service.context import ServiceContext
from kernelgrade.service.pages.viewer import ANONYMOUS
from kernelgrade.service.routes.system import workers
from kernelgrade.service.views import problem_summary, submission_out
from kernelgrade.storage.page_data import device_classes, queue_depth
from kernelgrade.storage.problems import list_latest_problems
from kernelgrade.storage.records import SubmissionFilter
from kernelgrade.storage.submissions import list_submissions

RECENT = 15


def home_page(context: ServiceContext) -> dict[str, Any]:
    with context.database.session() as session:
        problems = [problem_summary(p) for p in list_latest_problems(session)]
        recent = list_submissions(session, SubmissionFilter(), None, RECENT).items
        depth, devices = queue_depth(session), device_classes(session)
    suites: dict[str, list[Any]] = defaultdict(list)
    for problem in problems:
        suites[problem.suite].append(problem)
    return {"suites": dict(suites), "devices": devices, "queue_depth": depth,
            # Listings never carry sources, so the anonymous view is the right one for everyone.
            "recent": [submission_out(v, ANONYMOUS, with_source=False) for v in recent],
            "workers": workers(context).workers}
