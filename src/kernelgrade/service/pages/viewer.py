"""Who is looking at a page. Browsers send no API key, so without one a page is rendered for an anonymous
reader (results are public, sources only if public) instead of failing with 401 as the JSON API does;
a presented key, or open mode, gets exactly the JSON API's principal and therefore its visibility rules."""

from __future__ import annotations

from fastapi import Request

from kernelgrade.service.auth import Principal, authenticate, presented_key
from kernelgrade.service.context import ServiceContext
from kernelgrade.storage.records import Role

ANONYMOUS = Principal("anonymous", Role.SUBMITTER, None, open_mode=False)


def page_viewer(request: Request, context: ServiceContext) -> Principal:
    if presented_key(request) is None and not context.settings.is_open:
        return ANONYMOUS
    return authenticate(request, context)
