"""POST/GET /v1/submissions."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from kernelgrade.service.auth import Context, CurrentPrincipal
from kernelgrade.service.errors import ApiError, not_found
from kernelgrade.service.routes.cursor import decode_cursor, encode_cursor
from kernelgrade.service.routes.params import QueryText
from kernelgrade.service.routes.responses import KEYED, WITH_BODY, errors
from kernelgrade.service.routes.submission_body import openapi_body, read_submission
from kernelgrade.service.schemas import (
    MAX_ID,
    BatchIn,
    BatchItemOut,
    BatchOut,
    ErrorBody,
    SubmissionOut,
    SubmissionPageOut,
    VerdictName,
)
from kernelgrade.service.submitting import Accepted, submit, submit_batch
from kernelgrade.service.views import submission_out
from kernelgrade.storage.records import SubmissionFilter
from kernelgrade.storage.submissions import get_submission, list_submissions

router = APIRouter(prefix="/v1/submissions", tags=["submissions"])


@router.post("", status_code=201, response_model=SubmissionOut, openapi_extra=openapi_body(),
             responses={200: {"model": SubmissionOut, "description": "an identical earlier submission (no regrade)"},
                        **errors(*KEYED, *WITH_BODY, 404, 409, 415)})
async def create_submission(request: Request, response: Response, principal: CurrentPrincipal,
                            context: Context) -> SubmissionOut:
    """Queue a submission for grading (JSON, or multipart with the source in `file`)."""
    body = await read_submission(request)
    accepted = await run_in_threadpool(submit, context, principal, body)
    response.status_code = 201 if accepted.created else 200
    return _accepted_out(accepted, principal)


@router.post("/batch", response_model=BatchOut, responses=errors(*KEYED, *WITH_BODY))
def create_batch(body: BatchIn, principal: CurrentPrincipal, context: Context) -> BatchOut:
    """Queue several submissions; each item has its submission or its own error."""
    results = submit_batch(context, principal, body.submissions)
    return BatchOut(items=[_batch_item(r, principal) for r in results])


# `:int` keeps /batch and other words out of this route: GET /v1/submissions/batch is a 405 (POST only), not a
# malformed id.
@router.get("/{submission_id:int}", response_model=SubmissionOut, responses=errors(*KEYED, 404, 422))
def read_one(submission_id: Annotated[int, Path(ge=1, le=MAX_ID)], principal: CurrentPrincipal,
             context: Context) -> SubmissionOut:
    """Status, verdict, timings, errors, environment and live progress of one submission."""
    with context.database.session() as session:
        view = get_submission(session, submission_id)
    if view is None:
        raise not_found("submission_not_found", f"no submission {submission_id}; GET /v1/submissions lists them.")
    return submission_out(view, principal)


@router.get("", response_model=SubmissionPageOut, responses=errors(*KEYED, 422))
def read_many(principal: CurrentPrincipal, context: Context, problem: QueryText = None,
              submitter: QueryText = None, verdict: VerdictName | None = None, cursor: str | None = None,
              limit: Annotated[int, Query(ge=1, le=200)] = 50) -> SubmissionPageOut:
    """Newest first, filtered; continue with `?cursor=<next_cursor>`. Sources are not listed."""
    where = SubmissionFilter(problem=problem, submitter=submitter, verdict=verdict)
    with context.database.session() as session:
        page = list_submissions(session, where, decode_cursor(cursor), limit)
    return SubmissionPageOut(items=[submission_out(v, principal, with_source=False) for v in page.items],
                             next_cursor=encode_cursor(page.next_cursor))


def _accepted_out(accepted: Accepted, principal: CurrentPrincipal) -> SubmissionOut:
    return submission_out(accepted.view, principal, with_source=False, duplicate=not accepted.created,
                          warnings=list(accepted.warnings))


def _batch_item(result: Accepted | ApiError, principal: CurrentPrincipal) -> BatchItemOut:
    if isinstance(result, ApiError):
        return BatchItemOut(error=ErrorBody(code=result.code, message=result.message))
    return BatchItemOut(submission=_accepted_out(result, principal))
