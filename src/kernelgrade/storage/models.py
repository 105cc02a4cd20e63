"""The tables, as SQLAlchemy 2.0 typed models. The migrations under storage/migrations create them.

Status and verdict are plain strings here: storage does not know the evaluator's enums, the service
converts at its edge. Results are kept twice: the full EvalResult JSON blob (`result`) for display, and
typed columns (verdict, speedup, medians, environment) for queries and indexes.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

JSONType = JSON().with_variant(JSONB(), "postgresql")


class UtcDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on both backends (SQLite stores them naive)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        return value.astimezone(UTC) if dialect.name != "sqlite" else value.astimezone(UTC).replace(tzinfo=None)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    type_annotation_map: ClassVar[dict[Any, Any]] = {datetime: UtcDateTime, dict[str, Any]: JSONType}


class ProblemRow(Base):
    __tablename__ = "problems"
    __table_args__ = (
        UniqueConstraint("name", "content_hash", name="uq_problems_name_hash"),
        Index("ix_problems_name_latest", "name", "is_latest"),
        Index("ix_problems_suite", "suite"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    suite: Mapped[str] = mapped_column(String(100))
    level: Mapped[int | None]
    device_kind: Mapped[str] = mapped_column(String(20))
    source: Mapped[str] = mapped_column(Text)
    content_hash: Mapped[str] = mapped_column(String(64))
    # precision policy, flops, bytes, tags, description, input shapes
    meta: Mapped[dict[str, Any]] = mapped_column("metadata")
    # The most recently upserted content of this name; submissions by name go to it.
    is_latest: Mapped[bool] = mapped_column(default=True)
    created_at: Mapped[datetime]


class ApiKeyRow(Base):
    __tablename__ = "api_keys"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    role: Mapped[str] = mapped_column(String(20))
    # The first characters of the key, stored in clear so a presented key finds its row by index.
    prefix: Mapped[str] = mapped_column(String(16), unique=True)
    key_hash: Mapped[str] = mapped_column(String(64))
    quota_per_day: Mapped[int | None]
    rate_per_minute: Mapped[int | None]
    created_at: Mapped[datetime]
    revoked_at: Mapped[datetime | None]


class SubmissionRow(Base):
    __tablename__ = "submissions"
    __table_args__ = (
        Index("ix_submissions_dedupe", "problem_id", "source_hash", "submitter", "model"),
        Index("ix_submissions_submitter", "submitter", "id"),
        Index("ix_submissions_key_created", "api_key_id", "created_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    problem_id: Mapped[int] = mapped_column(ForeignKey("problems.id", ondelete="RESTRICT"), index=True)
    submitter: Mapped[str] = mapped_column(String(100))
    model: Mapped[str] = mapped_column(String(200), default="")
    source: Mapped[str] = mapped_column(Text)
    source_hash: Mapped[str] = mapped_column(String(64))
    public: Mapped[bool] = mapped_column(default=False)
    api_key_id: Mapped[int | None] = mapped_column(ForeignKey("api_keys.id", ondelete="SET NULL"))
    created_at: Mapped[datetime]


class EvaluationRow(Base):
    __tablename__ = "evaluations"
    __table_args__ = (
        # The claim query: unfinished jobs for a device, oldest first.
        Index("ix_evaluations_queue", "status", "requested_device", "id"),
        # Leaderboards: correct results of a problem on a device class, by speed.
        Index("ix_evaluations_board", "problem_id", "verdict", "device_class", "speedup"),
        Index("ix_evaluations_lease_owner", "lease_owner"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"), index=True)
    # Copied from the submission so that leaderboard queries filter by one index.
    problem_id: Mapped[int] = mapped_column(ForeignKey("problems.id", ondelete="RESTRICT"))
    # Routing key: "cpu", "cuda" (any GPU) or a device class such as "cuda-h100".
    requested_device: Mapped[str] = mapped_column(String(60))
    # The class of the judge that graded it (set when claimed).
    device_class: Mapped[str | None] = mapped_column(String(60))
    status: Mapped[str] = mapped_column(String(20))
    verdict: Mapped[str | None] = mapped_column(String(20))
    attempts: Mapped[int] = mapped_column(default=0)
    lease_owner: Mapped[str | None] = mapped_column(String(200))
    lease_expires: Mapped[datetime | None]
    result: Mapped[dict[str, Any] | None]
    speedup: Mapped[float | None] = mapped_column(Float)
    # torch.compile of the reference's median over the candidate's; None where no compiled baseline was timed.
    speedup_vs_compiled: Mapped[float | None] = mapped_column(Float)
    reference_median_ms: Mapped[float | None] = mapped_column(Float)
    candidate_median_ms: Mapped[float | None] = mapped_column(Float)
    error_code: Mapped[str | None] = mapped_column(String(100))
    error_summary: Mapped[str | None] = mapped_column(Text)
    # Why the previous attempt did not finish (a grader fault or a lost worker); kept for the record.
    last_error: Mapped[str | None] = mapped_column(Text)
    device_name: Mapped[str | None] = mapped_column(String(200))
    driver_version: Mapped[str | None] = mapped_column(String(100))
    torch_version: Mapped[str | None] = mapped_column(String(100))
    cuda_version: Mapped[str | None] = mapped_column(String(100))
    sandbox: Mapped[str | None] = mapped_column(String(40))
    host: Mapped[str | None] = mapped_column(String(200))
    progress_stage: Mapped[str | None] = mapped_column(String(40))
    progress_message: Mapped[str | None] = mapped_column(String(500))
    progress_done: Mapped[int] = mapped_column(default=0)
    progress_total: Mapped[int] = mapped_column(default=0)
    created_at: Mapped[datetime]
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]


class BoardEntryRow(Base):
    """The best correct result of each (submitter, model) on a problem version and device class, kept up
    to date as results are recorded, so a leaderboard read touches its entries only."""

    __tablename__ = "board_entries"
    __table_args__ = (Index("ix_board_entries_rank", "problem_id", "device_class", "best_speedup"),
                      Index("ix_board_entries_best", "problem_id", "best_speedup"))

    problem_id: Mapped[int] = mapped_column(ForeignKey("problems.id", ondelete="CASCADE"), primary_key=True)
    device_class: Mapped[str] = mapped_column(String(60), primary_key=True)
    submitter: Mapped[str] = mapped_column(String(100), primary_key=True)
    model: Mapped[str] = mapped_column(String(200), primary_key=True)
    best_speedup: Mapped[float] = mapped_column(Float)
    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"))
    reference_median_ms: Mapped[float | None] = mapped_column(Float)
    candidate_median_ms: Mapped[float | None] = mapped_column(Float)
    finished_at: Mapped[datetime | None]
    # Of the same (best) result; not ranked on.
    speedup_vs_compiled: Mapped[float | None] = mapped_column(Float)


class ModelStatsRow(Base):
    """Per problem version, device class and model label: finished, correct and flagged results and the
    best correct speedup; the suite leaderboard reads these instead of every evaluation."""

    __tablename__ = "model_stats"

    problem_id: Mapped[int] = mapped_column(ForeignKey("problems.id", ondelete="CASCADE"), primary_key=True)
    device_class: Mapped[str] = mapped_column(String(60), primary_key=True)
    model: Mapped[str] = mapped_column(String(200), primary_key=True)
    finished: Mapped[int] = mapped_column(default=0)
    correct: Mapped[int] = mapped_column(default=0)
    flagged: Mapped[int] = mapped_column(default=0)
    best_speedup: Mapped[float | None] = mapped_column(Float)


class CompiledBaselineRow(Base):
    """torch.compile of a problem version's reference, timed on one device class under one torch version.
    Measured by an evaluation that found none fresh, reused by later ones; rows are kept as history."""

    __tablename__ = "compiled_baselines"
    __table_args__ = (Index("ix_compiled_baselines_lookup", "problem_id", "device_class", "torch_version",
                            "measured_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    problem_id: Mapped[int] = mapped_column(ForeignKey("problems.id", ondelete="CASCADE"))
    device_class: Mapped[str] = mapped_column(String(60))
    torch_version: Mapped[str] = mapped_column(String(100))
    status: Mapped[str] = mapped_column(String(20))  # "measured" or "failed"
    median_ms: Mapped[float | None] = mapped_column(Float)
    measured_at: Mapped[datetime]
    # The evaluator's CompiledBaseline as JSON, handed back as is when the baseline is reused.
    baseline: Mapped[dict[str, Any]]


class WorkerRow(Base):
    """A judge of some pool, as it last reported itself (heartbeats)."""

    __tablename__ = "workers"

    name: Mapped[str] = mapped_column(String(200), primary_key=True)
    device_class: Mapped[str] = mapped_column(String(60))
    serves: Mapped[str] = mapped_column(String(300))
    host: Mapped[str] = mapped_column(String(200))
    pid: Mapped[int]
    versions: Mapped[dict[str, Any]]
    # What a judge can allocate on its card, as it measured it; the problem catalogue checks problems against it.
    device_memory_bytes: Mapped[int | None] = mapped_column(BigInteger)
    current_evaluation_id: Mapped[int | None]
    started_at: Mapped[datetime]
    last_heartbeat: Mapped[datetime]


class RateCounterRow(Base):
    """Requests of one API key in one fixed window. Kept in the database, so that every API process of a
    deployment counts into the same row; rows of past windows are pruned as new ones start."""

    __tablename__ = "rate_counters"
    __table_args__ = (Index("ix_rate_counters_window", "window_start"),)

    bucket: Mapped[str] = mapped_column(String(200), primary_key=True)
    # Seconds since the epoch (UTC) at which the window began: an integer compares and matches the same way on
    # both backends, where a timestamp in a primary key would depend on how SQLite spells it.
    window_start: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    count: Mapped[int] = mapped_column(Integer)
