"""The submission page: verdict and what it means, trials, timings and their samples, environment,
errors with the lines that matter, integrity findings, and the source for whoever may read it."""

from __future__ import annotations

from typing import Any

from kernelgrade.service.auth import Principal
from kernelgrade.service.context import ServiceContext
from kernelgrade.service.errors import not_found
from kernelgrade.service.pages.explanations import explain_verdict, relevant_lines, source_excerpt
from kernelgrade.service.pages.measurements import trials
from kernelgrade.service.pages.svg_plots import timing_samples
from kernelgrade.service.schemas import SubmissionOut
from kernelgrade.service.stored_result import StoredResult, StoredTiming
from kernelgrade.service.views import submission_out
from kernelgrade.storage.records import SubmissionView
from kernelgrade.storage.submissions import get_submission


def load_submission(context: ServiceContext, submission_id: int) -> SubmissionView:
    with context.database.session() as session:
        view = get_submission(session, submission_id)
    if view is None:
        raise not_found("submission_not_found", f"no submission {submission_id}")
    return view


def _samples(timing: StoredTiming | None) -> list[float]:
    return timing.samples_ms if timing is not None else []


def submission_page(context: ServiceContext, submission_id: int, viewer: Principal) -> dict[str, Any]:
    view = load_submission(context, submission_id)
    result = StoredResult.read(view.evaluation.result if view.evaluation else None)
    out = submission_out(view, viewer, stored=result)
    # Trials and timing samples are measurements, public like the verdict; the failure's detail and the
    # source follow the JSON API's rules through `out`.
    evaluation = out.evaluation
    failure = evaluation.failure if evaluation else None
    return {"s": out, "e": evaluation, "status": evaluation.status if evaluation else "queued",
            "explanation": explain_verdict(evaluation.verdict if evaluation else None,
                                           evaluation.status if evaluation else "queued"),
            "trials": trials(result.trials), "interval": result.speedup_interval(),
            "plot": timing_samples(_samples(result.reference_timing), _samples(result.candidate_timing)),
            "error_lines": relevant_lines(failure.detail) if failure and failure.detail else [],
            "excerpt": source_excerpt(out.source or "", failure.line if failure else None)}


def submission_state(context: ServiceContext, submission_id: int, viewer: Principal) -> dict[str, Any]:
    """What the page's poller compares: status, verdict and progress (no source, no result)."""
    out: SubmissionOut = submission_out(load_submission(context, submission_id), viewer, with_source=False)
    evaluation = out.evaluation
    if evaluation is None:
        return {"status": "queued", "verdict": None, "progress": None, "queue_position": None}
    progress = evaluation.progress
    return {"status": evaluation.status, "verdict": evaluation.verdict, "queue_position": evaluation.queue_position,
            "progress": f"{progress.stage}: {progress.message}" if progress else None}
