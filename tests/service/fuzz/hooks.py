"""Schemathesis hooks for the fuzz runs (SCHEMATHESIS_HOOKS=tests.service.fuzz.hooks).

Waits are kept short: GET /v1/submissions/wait holds its request until one of its submissions is graded or its
timeout (30 s by default, at most 60) passes, and the fuzzed servers grade nothing, so a wait on a submission
the run made would last its whole timeout, past the run's request timeout. A timeout the server accepts is
lowered to SHORT_WAIT_S (and one is added where the case has none); one it refuses is left to be refused.

The config lets a schema-valid request be answered 422, because some rules are not expressible in a schema.
This check keeps that allowance narrow: such a 422 must name one of those rules, never `invalid_request`
(the answer to a body or parameter that breaks the schema itself).
"""

from __future__ import annotations

import json

import schemathesis
from schemathesis import Case, CheckContext, HookContext, Response

# The content rules that the OpenAPI document describes in words only.
SEMANTIC_CODES = frozenset({"invalid_cursor", "invalid_problem", "device_mismatch"})
WAIT_PATH = "/v1/submissions/wait"
LONGEST_WAIT_S = 60.0
SHORT_WAIT_S = 0.1


@schemathesis.hook
def map_case(_ctx: HookContext, case: Case) -> Case:
    if case.operation.path == WAIT_PATH and isinstance(case.query, dict):
        timeout = case.query.get("timeout", SHORT_WAIT_S)
        if _accepted_wait(timeout):
            case.query["timeout"] = SHORT_WAIT_S
    return case


def _accepted_wait(value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return False
    try:
        seconds = float(value)
    except ValueError:
        return False
    return 0 <= seconds <= LONGEST_WAIT_S


@schemathesis.check
def only_semantic_rejections(ctx: CheckContext, response: Response, case: Case) -> bool | None:
    positive = case.meta is not None and case.meta.generation.mode.is_positive
    if not positive or response.status_code != 422:
        return None
    code = json.loads(response.text)["error"]["code"]
    if code not in SEMANTIC_CODES:
        raise AssertionError(f"a schema-valid request was refused as {code!r}: the schema and the server's"
                             " validation disagree")
    return None
