"""POST/GET /v1/submissions: submitting, one result, a listing, many results at once and the wait for them."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request, Response
from pydantic import Field
from starlette.concurrency import run_in_threadpool

from kernelgrade.service.auth import Context, CurrentPrincipal
from kernelgrade.service.errors import ApiError, not_found
from kernelgrade.service.routes.cursor import decode_cursor, encode_cursor
from kernelgrade.service.routes.params import QueryText, given_once
from kernelgrade.service.routes.responses import KEYED, WITH_BODY, errors
from kernelgrade.service.routes.submission_body import openapi_body, read_submission
from kernelgrade.service.schemas import (
    DEFAULT_WAIT_S,
    MAX_ID,
    MAX_IDS,
    MAX_WAIT_S,
    BatchIn,
    BatchItemOut,
    BatchOut,
    ErrorBody,
    FinishedOut,
    SubmissionLimitsOut,
    SubmissionLookupOut,
    SubmissionOut,
    SubmissionPageOut,
    VerdictName,
)
from kernelgrade.service.submission_results import look_up, wait_for_finished
from kernelgrade.service.submitting import Accepted, submit, submit_batch
from kernelgrade.service.views import submission_out
from kernelgrade.storage.records import SubmissionFilter
from kernelgrade.storage.submissions import get_submission, list_submissions

router = APIRouter(prefix="/v1/submissions", tags=["submissions"])

# `?ids=1&ids=2`. The count is checked by the handler (a 422 that says to split the ids), so the schema's
# maxItems is stated for the document only.
SubmissionIds = Annotated[list[Annotated[int, Field(ge=1, le=MAX_ID)]], Query(
    min_length=1, json_schema_extra={"maxItems": MAX_IDS},
    description=f"submission ids, repeated: ?ids=1&ids=2 (at most {MAX_IDS})")]
WaitSeconds = Annotated[float, Query(ge=0, le=MAX_WAIT_S, description="seconds to wait at most")]


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


@router.get("", response_model=SubmissionPageOut, responses=errors(*KEYED, 422),
            dependencies=[given_once("problem", "submitter", "verdict", "cursor", "limit")])
def read_many(principal: CurrentPrincipal, context: Context, problem: QueryText = None,
              submitter: QueryText = None, verdict: VerdictName | None = None, cursor: str | None = None,
              limit: Annotated[int, Query(ge=1, le=200)] = 50) -> SubmissionPageOut:
    """Newest first, filtered; continue with `?cursor=<next_cursor>`. Sources are not listed."""
    where = SubmissionFilter(problem=problem, submitter=submitter, verdict=verdict)
    with context.database.session() as session:
        page = list_submissions(session, where, decode_cursor(cursor), limit)
    return SubmissionPageOut(items=[submission_out(v, principal, with_source=False) for v in page.items],
                             next_cursor=encode_cursor(page.next_cursor))


@router.get("/limits", response_model=SubmissionLimitsOut)
def limits(context: Context) -> SubmissionLimitsOut:
    """What one request may carry on this server: submissions per batch, ids per lookup or wait, the longest
    wait."""
    return SubmissionLimitsOut(max_batch=context.settings.max_batch, max_ids=MAX_IDS, max_wait_s=MAX_WAIT_S)


@router.get("/lookup", response_model=SubmissionLookupOut, responses=errors(*KEYED, 422))
def lookup(ids: SubmissionIds, principal: CurrentPrincipal, context: Context) -> SubmissionLookupOut:
    """Several submissions at once, in the order asked, as GET /v1/submissions/{id} shows each but without the
    source; ids that name no submission are listed in `missing`."""
    return look_up(context, principal, ids)


@router.get("/wait", response_model=FinishedOut, responses=errors(*KEYED, 404, 422),
            dependencies=[given_once("timeout")])
async def wait(request: Request, ids: SubmissionIds, principal: CurrentPrincipal, context: Context,
               timeout: WaitSeconds = DEFAULT_WAIT_S) -> FinishedOut:
    """Those of the submissions whose grading is done, as soon as at least one is (at once if one already is);
    an empty list at the timeout. Ask again with the ids still pending to follow a whole batch; works whichever
    process grades them. 404 if an id names no submission."""
    return await wait_for_finished(context, principal, ids, timeout, request.is_disconnected)


def _accepted_out(accepted: Accepted, principal: CurrentPrincipal) -> SubmissionOut:
    return submission_out(accepted.view, principal, with_source=False, duplicate=not accepted.created,
                          warnings=list(accepted.warnings))


def _batch_item(result: Accepted | ApiError, principal: CurrentPrincipal) -> BatchItemOut:
    if isinstance(result, ApiError):
        return BatchItemOut(error=ErrorBody(code=result.code, message=result.message))
    return BatchItemOut(submission=_accepted_out(result, principal))
