"""API keys, stored as a SHA-256 hash plus a short clear prefix to find the row."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from kernelgrade.storage.clock import utcnow
from kernelgrade.storage.models import ApiKeyRow
from kernelgrade.storage.records import ApiKeyRecord, Role


class KeyNameTaken(Exception):
    """Another key already has this name (names identify submitters)."""


@dataclass(frozen=True)
class NewApiKey:
    name: str
    role: Role
    prefix: str
    key_hash: str
    quota_per_day: int | None = None
    rate_per_minute: int | None = None


def add_key(session: Session, new: NewApiKey, now: datetime | None = None) -> ApiKeyRecord:
    row = ApiKeyRow(name=new.name, role=new.role.value, prefix=new.prefix, key_hash=new.key_hash,
                    quota_per_day=new.quota_per_day, rate_per_minute=new.rate_per_minute,
                    created_at=now or utcnow())
    try:
        with session.begin_nested():
            session.add(row)
    except IntegrityError as exc:
        raise KeyNameTaken(new.name) from exc
    return key_record(row)


def key_by_prefix(session: Session, prefix: str) -> ApiKeyRecord | None:
    row = session.scalars(select(ApiKeyRow).where(ApiKeyRow.prefix == prefix)).first()
    return key_record(row) if row is not None else None


def hold_key(session: Session, key_id: int) -> None:
    """Make the other transactions acting for this key wait until this one ends (a quota check and the insert
    it allows, done as one). A same-value UPDATE of the key's row takes Postgres's row lock and SQLite's write
    lock; SELECT ... FOR UPDATE would take nothing on SQLite. `role` is not a key column, so inserts that only
    reference the row (its submissions) do not wait."""
    session.execute(update(ApiKeyRow).where(ApiKeyRow.id == key_id).values(role=ApiKeyRow.role))


def list_keys(session: Session) -> list[ApiKeyRecord]:
    return [key_record(row) for row in session.scalars(select(ApiKeyRow).order_by(ApiKeyRow.id))]


def revoke_key(session: Session, name: str, now: datetime | None = None) -> bool:
    row = session.scalars(select(ApiKeyRow).where(ApiKeyRow.name == name, ApiKeyRow.revoked_at.is_(None))).first()
    if row is None:
        return False
    row.revoked_at = now or utcnow()
    return True


def key_record(row: ApiKeyRow) -> ApiKeyRecord:
    return ApiKeyRecord(id=row.id, name=row.name, role=Role(row.role), prefix=row.prefix, key_hash=row.key_hash,
                        quota_per_day=row.quota_per_day, rate_per_minute=row.rate_per_minute,
                        created_at=row.created_at, revoked_at=row.revoked_at)
