"""torch.compile baselines: one measurement per problem version, device class and torch version, reused by
later evaluations while it is younger than the configured age.

A failed measurement (inductor could not compile the reference) is stored and found like a measured one,
so a problem that torch.compile cannot handle costs one attempt per age period, not one per job.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from kernelgrade.storage.models import CompiledBaselineRow
from kernelgrade.storage.records import BaselineRecord


def fresh_baseline(session: Session, problem_id: int, device_class: str, torch: str, max_age: timedelta,
                   now: datetime) -> BaselineRecord | None:
    """The newest baseline of this problem version on this device class under this torch version measured
    after now - max_age, or None."""
    row = session.scalars(
        select(CompiledBaselineRow)
        .where(CompiledBaselineRow.problem_id == problem_id, CompiledBaselineRow.device_class == device_class,
               CompiledBaselineRow.torch_version == torch, CompiledBaselineRow.measured_at > now - max_age)
        .order_by(CompiledBaselineRow.measured_at.desc(), CompiledBaselineRow.id.desc())
        .limit(1)).first()
    if row is None:
        return None
    return BaselineRecord(torch=row.torch_version, status=row.status, median_ms=row.median_ms,
                          measured_at=row.measured_at, data=row.baseline)


def record_baseline(session: Session, problem_id: int, device_class: str, baseline: BaselineRecord) -> None:
    """Store a new measurement, in the caller's transaction. Earlier ones stay: the newest is the one used."""
    session.add(CompiledBaselineRow(problem_id=problem_id, device_class=device_class, torch_version=baseline.torch,
                                    status=baseline.status, median_ms=baseline.median_ms,
                                    measured_at=baseline.measured_at, baseline=baseline.data))
    session.flush()
