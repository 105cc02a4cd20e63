"""Many submissions' results in one call, and the wait for the next of them to finish.

A wait is driven by the database, not by events of this process: the judge that finishes a job may be this
process's embedded pool or a Celery worker on another host, and all of them only write the job's row. So a
wait reads the state of all its ids, in one query, every POLL_INTERVAL_S until one is done or its time is up.
Results are shown as everywhere else (views.py): full results to those who may read them, sources to no one
(a round of results would otherwise carry every source back to the loop that sent it).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence

from starlette.concurrency import run_in_threadpool

from kernelgrade.service.auth import Principal
from kernelgrade.service.context import ServiceContext
from kernelgrade.service.errors import invalid, not_found
from kernelgrade.service.schemas import MAX_IDS, FinishedOut, SubmissionLookupOut, SubmissionOut
from kernelgrade.service.views import submission_out
from kernelgrade.storage.records import JobStatus, SubmissionView
from kernelgrade.storage.submissions import get_submissions, submission_states

# A verdict reaches its waiter within half a second, a small delay beside a grading's seconds to minutes,
# while each waiter costs the database one indexed query per round: two a second.
POLL_INTERVAL_S = 0.5
# Ids named in an error message; the rest are counted.
NAMED_IDS = 10


def look_up(context: ServiceContext, principal: Principal, ids: Sequence[int]) -> SubmissionLookupOut:
    wanted = _wanted(ids)
    with context.database.session() as session:
        views = get_submissions(session, wanted)
    found = {view.submission.id for view in views}
    return SubmissionLookupOut(items=_shown(views, principal), missing=[i for i in wanted if i not in found])


async def wait_for_finished(context: ServiceContext, principal: Principal, ids: Sequence[int], timeout_s: float,
                            gone: Callable[[], Awaitable[bool]]) -> FinishedOut:
    """Those of `ids` that are done, as soon as one is; none once `timeout_s` has passed, or the caller
    hung up (`gone`)."""
    wanted = _wanted(ids)
    deadline = time.monotonic() + timeout_s
    while True:
        views = await run_in_threadpool(_finished, context, wanted)
        left = deadline - time.monotonic()
        if views or left <= 0 or await gone():
            return FinishedOut(items=_shown(views, principal))
        await asyncio.sleep(min(POLL_INTERVAL_S, left))


def _wanted(ids: Sequence[int]) -> list[int]:
    """The ids once each, in the order given; the count is checked here rather than by the schema, so that the
    answer says what to do."""
    if len(ids) > MAX_IDS:
        raise invalid("too_many_ids", f"{len(ids)} ids in one request; the limit is {MAX_IDS}. Split them over"
                      " several requests (the Python client, kernelgrade.client, does).")
    return list(dict.fromkeys(ids))


def _finished(context: ServiceContext, ids: list[int]) -> list[SubmissionView]:
    with context.database.session() as session:
        states = submission_states(session, ids)
        missing = [i for i in ids if i not in states]
        if missing:
            raise not_found("submission_not_found", f"no submission {_id_list(missing)}: nothing to wait for."
                            " Wait only for ids that POST /v1/submissions or /v1/submissions/batch returned.")
        done = [i for i in ids if states[i] is JobStatus.DONE]
        return get_submissions(session, done) if done else []


def _shown(views: list[SubmissionView], principal: Principal) -> list[SubmissionOut]:
    return [submission_out(view, principal, with_source=False) for view in views]


def _id_list(ids: list[int]) -> str:
    named = ", ".join(str(i) for i in ids[:NAMED_IDS])
    return named if len(ids) <= NAMED_IDS else f"{named} and {len(ids) - NAMED_IDS} more"
