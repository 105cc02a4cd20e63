"""Schemathesis hooks for the fuzz runs (SCHEMATHESIS_HOOKS=tests.service.fuzz.hooks).

The config lets a schema-valid request be answered 422, because some rules are not expressible in a schema.
This check keeps that allowance narrow: such a 422 must name one of those rules, never `invalid_request`
(the answer to a body or parameter that breaks the schema itself).
"""

from __future__ import annotations

import json

import schemathesis
from schemathesis import Case, CheckContext, Response

# The content rules that the OpenAPI document describes in words only.
SEMANTIC_CODES = frozenset({"invalid_cursor", "invalid_problem", "device_mismatch"})


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
