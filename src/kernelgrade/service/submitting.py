"""Accepting submissions: size and quota checks, the problem's latest version, de-duplication, queueing.

An identical source from the same submitter and model for the same problem version returns the earlier
submission and its result (no second grading) unless `force` is set. The scope is per submitter so that a
leaderboard entry is never credited to someone who did not submit it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy.orm import Session

from kernelgrade.service.auth import Principal
from kernelgrade.service.context import ServiceContext
from kernelgrade.service.errors import ApiError, conflict, invalid, not_found, too_large, too_many
from kernelgrade.service.schemas import SubmissionIn
from kernelgrade.storage.api_keys import hold_key
from kernelgrade.storage.clock import utcnow
from kernelgrade.storage.problems import latest_problem
from kernelgrade.storage.records import JobStatus, NewSubmission, ProblemRecord, SubmissionView
from kernelgrade.storage.submissions import create_submission, find_duplicate, submissions_since
from kernelgrade.storage.workers import list_workers

QUOTA_WINDOW = timedelta(days=1)


@dataclass(frozen=True)
class Accepted:
    view: SubmissionView
    created: bool
    warnings: tuple[str, ...] = ()


def check_size(context: ServiceContext, body: SubmissionIn) -> None:
    size, limit = len(body.source.encode()), context.settings.max_source_bytes
    if size > limit:
        raise too_large("source_too_large", f"the source is {size} bytes; the limit is {limit}"
                        " (KERNELGRADE_MAX_SOURCE_BYTES). Submit only the ModelNew module, without embedded data.")


def submit(context: ServiceContext, principal: Principal, body: SubmissionIn) -> Accepted:
    check_size(context, body)
    with context.database.session() as session:
        enforce_quota(session, context, principal, 1)
        accepted = _submit_in(session, principal, body)
    evaluation = accepted.view.evaluation
    if accepted.created and evaluation is not None:
        context.job_queued(evaluation.id, evaluation.requested_device)
    return Accepted(accepted.view, accepted.created, _routing_warnings(context, accepted.view))


def _submit_in(session: Session, principal: Principal, body: SubmissionIn) -> Accepted:
    problem = latest_problem(session, body.problem)
    if problem is None:
        raise not_found("problem_not_found", f"no problem named '{body.problem}'. GET /v1/problems lists them;"
                        " an admin adds one with POST /v1/problems or `kernelgrade problems import`.")
    device = _device_for(problem, body.device)
    submitter = principal.submitter_name(body.submitter)
    source_hash = hashlib.sha256(body.source.encode()).hexdigest()
    earlier = find_duplicate(session, problem.id, source_hash, submitter, body.model)
    if earlier is not None and not body.force:
        return Accepted(earlier, created=False)
    if earlier is not None and earlier.evaluation and earlier.evaluation.status is not JobStatus.DONE:
        raise conflict("evaluation_in_progress", f"submission {earlier.submission.id} of this exact source is still"
                       f" being graded ({earlier.evaluation.status.value}); wait for it with GET"
                       f" /v1/submissions/{earlier.submission.id} before forcing a regrade.")
    new = NewSubmission(problem_id=problem.id, submitter=submitter, model=body.model, source=body.source,
                        source_hash=source_hash, public=body.public, api_key_id=principal.key_id,
                        requested_device=device)
    return Accepted(create_submission(session, new), created=True)


def _device_for(problem: ProblemRecord, requested: str | None) -> str:
    kind = problem.device_kind
    if requested is None or requested == kind:
        return kind
    if kind == "cuda" and requested.startswith("cuda-"):
        return requested
    raise invalid("device_mismatch", f"problem '{problem.name}' runs on {kind}; device '{requested}' cannot grade it."
                  f" Leave `device` out, or name a {kind} device class (e.g. cuda-h100).")


def enforce_quota(session: Session, context: ServiceContext, principal: Principal, count: int) -> None:
    quota = principal.quota_per_day or context.settings.quota_per_day
    if principal.key_id is None or principal.is_admin or quota <= 0:
        return
    # Held until the submission is stored: two API processes cannot both see the last free slot.
    hold_key(session, principal.key_id)
    now = utcnow()
    used, oldest = submissions_since(session, principal.key_id, now - QUOTA_WINDOW)
    if used + count <= quota:
        return
    wait = (oldest + QUOTA_WINDOW - now).total_seconds() if oldest is not None else QUOTA_WINDOW.total_seconds()
    raise too_many("quota_exceeded", f"key '{principal.name}' has made {used} of its {quota} submissions in the"
                   f" last 24 hours; this request adds {count}.", wait)


def _routing_warnings(context: ServiceContext, view: SubmissionView) -> tuple[str, ...]:
    evaluation = view.evaluation
    if evaluation is None or evaluation.status is JobStatus.DONE:
        return ()
    seen_since = utcnow() - timedelta(seconds=max(3 * context.settings.lease_seconds, 30.0))
    with context.database.session() as session:
        workers = list_workers(session, seen_since)
    if any(evaluation.requested_device in w.serves for w in workers):
        return ()
    return (f"no worker for device '{evaluation.requested_device}' is online; the job stays queued until one is"
            " (GET /v1/workers lists them).",)


def submit_batch(context: ServiceContext, principal: Principal,
                 bodies: list[SubmissionIn]) -> list[Accepted | ApiError]:
    limit = context.settings.max_batch
    if len(bodies) > limit:
        raise invalid("batch_too_large", f"{len(bodies)} submissions in one batch; the limit is {limit}"
                      " (KERNELGRADE_MAX_BATCH). Split it into several requests.")
    for body in bodies:
        check_size(context, body)
    with context.database.session() as session:
        enforce_quota(session, context, principal, len(bodies))
    results: list[Accepted | ApiError] = []
    for body in bodies:
        try:
            results.append(submit(context, principal, body))
        except ApiError as exc:
            results.append(exc)
    return results
