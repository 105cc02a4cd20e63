"""Who is calling: an API key (X-API-Key or Authorization: Bearer) or, in open mode, the local user.

Open mode (the default when bound to loopback) treats a caller without a key as the local administrator;
a key that is sent is still checked, so scripts behave the same in both modes.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request, Security
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from kernelgrade.service.context import ServiceContext, get_context
from kernelgrade.service.errors import ApiError, too_many
from kernelgrade.service.key_material import key_prefix, matches
from kernelgrade.storage.api_keys import key_by_prefix
from kernelgrade.storage.records import ApiKeyRecord, Role, SubmissionRecord

LOCAL_USER = "local"


@dataclass(frozen=True)
class Principal:
    name: str
    role: Role
    key_id: int | None
    open_mode: bool  # the unauthenticated local user of an open-mode server
    rate_per_minute: int | None = None
    quota_per_day: int | None = None

    @property
    def is_admin(self) -> bool:
        return self.role is Role.ADMIN

    def submitter_name(self, requested: str | None) -> str:
        """With a key the key's name; in open mode whatever the caller says."""
        return (requested or self.name) if self.open_mode else self.name

    def may_read_source(self, submission: SubmissionRecord) -> bool:
        mine = self.key_id is not None and submission.api_key_id == self.key_id
        return self.open_mode or self.is_admin or mine or submission.public


def presented_key(request: Request) -> str | None:
    key = request.headers.get("x-api-key")
    if key:
        return key.strip()
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def authenticate(request: Request, context: Annotated[ServiceContext, Depends(get_context)]) -> Principal:
    key = presented_key(request)
    settings = context.settings
    if key is None:
        if settings.is_open:
            return Principal(LOCAL_USER, Role.ADMIN, None, open_mode=True)
        raise ApiError(401, "missing_api_key", "this server needs an API key: send it as `X-API-Key: <key>` or"
                       " `Authorization: Bearer <key>`. An admin creates one with `kernelgrade keys create`.")
    principal = _principal_for(context, key)
    _rate_limit(context, principal)
    return principal


def _principal_for(context: ServiceContext, key: str) -> Principal:
    settings = context.settings
    if settings.admin_key and hmac.compare_digest(key.encode(), settings.admin_key.encode()):
        return Principal("admin", Role.ADMIN, None, open_mode=False)
    with context.database.session() as session:
        record = key_by_prefix(session, key_prefix(key))
    if record is None or not matches(key, record.key_hash):
        raise ApiError(401, "invalid_api_key", "the API key is not known here; check for a typo or ask an admin"
                       " for a new one (`kernelgrade keys create`).")
    if record.revoked_at is not None:
        raise ApiError(401, "revoked_api_key", f"the API key {record.prefix}... was revoked; ask an admin for a"
                       " new one.")
    return _key_principal(record)


def _key_principal(record: ApiKeyRecord) -> Principal:
    return Principal(record.name, record.role, record.id, False, record.rate_per_minute, record.quota_per_day)


def _rate_limit(context: ServiceContext, principal: Principal) -> None:
    limit = principal.rate_per_minute or context.settings.rate_limit_per_minute
    if limit <= 0:
        return
    wait = context.limiter.acquire(f"{principal.name}:{principal.key_id}", limit)
    if wait is not None:
        raise too_many("rate_limited", f"more than {limit} requests in a minute from key '{principal.name}'.", wait)


def require_admin(principal: Principal) -> None:
    if not principal.is_admin:
        raise ApiError(403, "forbidden", f"'{principal.name}' is a {principal.role.value} key; this needs an admin"
                       " key.")


# Declared for the OpenAPI document (and the /docs "Authorize" button); `presented_key` reads the same headers.
_API_KEY = APIKeyHeader(name="X-API-Key", scheme_name="ApiKey", auto_error=False,
                        description="an API key from `kernelgrade keys create`")
_BEARER = HTTPBearer(scheme_name="Bearer", auto_error=False, description="the same API key as a bearer token")


def _keyed(request: Request, context: Annotated[ServiceContext, Depends(get_context)],
           _key: Annotated[str | None, Security(_API_KEY)],
           _token: Annotated[HTTPAuthorizationCredentials | None, Security(_BEARER)]) -> Principal:
    return authenticate(request, context)


CurrentPrincipal = Annotated[Principal, Depends(_keyed)]
Context = Annotated[ServiceContext, Depends(get_context)]
