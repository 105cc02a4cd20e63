"""Problem versions: a (name, content hash) pair is one version; the latest upserted content of a name is
the one new submissions go to."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from kernelgrade.storage.clock import utcnow
from kernelgrade.storage.models import ProblemRow
from kernelgrade.storage.records import NewProblem, ProblemMemoryNeed, ProblemMeta, ProblemRecord, UpsertOutcome


def upsert_problem(session: Session, new: NewProblem, now: datetime | None = None) -> UpsertOutcome:
    """Insert the version if it is new, and make it the latest of its name. Idempotent on the hash."""
    previous = session.scalars(select(ProblemRow).where(ProblemRow.name == new.name, ProblemRow.is_latest)).first()
    previous_hash = previous.content_hash if previous is not None else None
    row = _find_version(session, new.name, new.content_hash)
    created = row is None
    if row is None:
        row = _insert_version(session, new, now or utcnow())
    if previous is None or previous.id != row.id:
        session.execute(update(ProblemRow).where(ProblemRow.name == new.name, ProblemRow.id != row.id)
                        .values(is_latest=False))
        row.is_latest = True
    session.flush()
    replaced = previous_hash if previous_hash != row.content_hash else None
    return UpsertOutcome(problem_record(row), created, replaced)


def _find_version(session: Session, name: str, content_hash: str) -> ProblemRow | None:
    query = select(ProblemRow).where(ProblemRow.name == name, ProblemRow.content_hash == content_hash)
    return session.scalars(query).first()


def _insert_version(session: Session, new: NewProblem, now: datetime) -> ProblemRow:
    row = ProblemRow(name=new.name, suite=new.suite, level=new.level, device_kind=new.device_kind,
                     source=new.source, content_hash=new.content_hash, meta=meta_to_json(new.meta),
                     is_latest=True, created_at=now)
    try:
        with session.begin_nested():
            session.add(row)
    except IntegrityError:  # the same version inserted concurrently: use that row
        found = _find_version(session, new.name, new.content_hash)
        if found is None:
            raise
        return found
    return row


def latest_problem(session: Session, name: str) -> ProblemRecord | None:
    row = session.scalars(select(ProblemRow).where(ProblemRow.name == name, ProblemRow.is_latest)).first()
    return problem_record(row) if row is not None else None


def problem_by_id(session: Session, problem_id: int) -> ProblemRecord | None:
    row = session.get(ProblemRow, problem_id)
    return problem_record(row) if row is not None else None


def problem_version(session: Session, name: str, content_hash_prefix: str) -> ProblemRecord | None:
    """A specific version of a problem, by (a prefix of) its content hash."""
    query = select(ProblemRow).where(ProblemRow.name == name,
                                     ProblemRow.content_hash.startswith(content_hash_prefix, autoescape=True))
    row = session.scalars(query.order_by(ProblemRow.id.desc())).first()
    return problem_record(row) if row is not None else None


def list_latest_problems(session: Session, suite: str | None = None) -> list[ProblemRecord]:
    query = select(ProblemRow).where(ProblemRow.is_latest)
    if suite is not None:
        query = query.where(ProblemRow.suite == suite)
    return [problem_record(row) for row in session.scalars(query.order_by(ProblemRow.suite, ProblemRow.name))]


def latest_problems_for(session: Session, device_kinds: Iterable[str], leaving_out: Iterable[int],
                        limit: int = 1) -> list[ProblemRecord]:
    """The newest problem versions graded on one of `device_kinds`, newest first, but those in `leaving_out`."""
    query = (select(ProblemRow).where(ProblemRow.is_latest, ProblemRow.device_kind.in_(list(device_kinds)),
                                      ProblemRow.id.not_in(list(leaving_out)))
             .order_by(ProblemRow.id.desc()).limit(limit))
    return [problem_record(row) for row in session.scalars(query)]


def problems_without_shapes(session: Session, limit: int = 20) -> list[ProblemRecord]:
    """Latest problems whose input shapes or memory no worker has looked at yet."""
    rows = session.scalars(select(ProblemRow).where(ProblemRow.is_latest).order_by(ProblemRow.id))
    missing = [problem_record(row) for row in rows if row.meta.get("input_shapes") is None
               or (row.meta.get("memory") is None and not row.meta.get("memory_note"))]
    return missing[:limit]


def set_input_shapes(session: Session, problem_id: int, shapes: tuple[str, ...],
                     memory: ProblemMemoryNeed | None = None, memory_note: str = "") -> None:
    row = session.get(ProblemRow, problem_id)
    if row is not None:
        row.meta = {**row.meta, "input_shapes": list(shapes),
                    "memory": None if memory is None else dataclasses.asdict(memory), "memory_note": memory_note}


def problem_record(row: ProblemRow) -> ProblemRecord:
    return ProblemRecord(id=row.id, name=row.name, suite=row.suite, level=row.level, device_kind=row.device_kind,
                         source=row.source, content_hash=row.content_hash, meta=meta_from_json(row.meta),
                         is_latest=row.is_latest, created_at=row.created_at)


def meta_to_json(meta: ProblemMeta) -> dict[str, Any]:
    data = dataclasses.asdict(meta)
    data["tags"] = list(meta.tags)
    data["input_shapes"] = None if meta.input_shapes is None else list(meta.input_shapes)
    return data


def meta_from_json(data: dict[str, Any]) -> ProblemMeta:
    names = {f.name for f in dataclasses.fields(ProblemMeta)}
    values = {k: v for k, v in data.items() if k in names}
    values["tags"] = tuple(values.get("tags") or ())
    shapes = values.get("input_shapes")
    values["input_shapes"] = None if shapes is None else tuple(shapes)
    memory = values.get("memory")
    values["memory"] = ProblemMemoryNeed(**memory) if isinstance(memory, dict) else None
    return ProblemMeta(**values)
