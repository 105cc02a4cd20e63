"""initial schema: problems, api_keys, submissions, evaluations, workers, board_entries, model_stats

Revision ID: 0001
Revises:
Create Date: 2026-11-21
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def _time(name: str, nullable: bool = False) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "api_keys",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("name", sa.String(100), nullable=False, unique=True),
        sa.Column("role", sa.String(20), nullable=False),
        sa.Column("prefix", sa.String(16), nullable=False, unique=True),
        sa.Column("key_hash", sa.String(64), nullable=False),
        sa.Column("quota_per_day", sa.Integer(), nullable=True),
        sa.Column("rate_per_minute", sa.Integer(), nullable=True),
        _time("created_at"),
        _time("revoked_at", nullable=True),
    )
    op.create_table(
        "problems",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("suite", sa.String(100), nullable=False),
        sa.Column("level", sa.Integer(), nullable=True),
        sa.Column("device_kind", sa.String(20), nullable=False),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("metadata", JSON, nullable=False),
        sa.Column("is_latest", sa.Boolean(), nullable=False),
        _time("created_at"),
        sa.UniqueConstraint("name", "content_hash", name="uq_problems_name_hash"),
    )
    op.create_index("ix_problems_name_latest", "problems", ["name", "is_latest"])
    op.create_index("ix_problems_suite", "problems", ["suite"])
    op.create_table(
        "workers",
        sa.Column("name", sa.String(200), primary_key=True),
        sa.Column("device_class", sa.String(60), nullable=False),
        sa.Column("serves", sa.String(300), nullable=False),
        sa.Column("host", sa.String(200), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("versions", JSON, nullable=False),
        sa.Column("current_evaluation_id", sa.Integer(), nullable=True),
        _time("started_at"),
        _time("last_heartbeat"),
    )
    op.create_table(
        "submissions",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("problem_id", sa.Integer(), sa.ForeignKey("problems.id", ondelete="RESTRICT"), nullable=False),
        sa.Column("submitter", sa.String(100), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("source_hash", sa.String(64), nullable=False),
        sa.Column("public", sa.Boolean(), nullable=False),
        sa.Column("api_key_id", sa.Integer(), sa.ForeignKey("api_keys.id", ondelete="SET NULL"), nullable=True),
        _time("created_at"),
    )
    op.create_index("ix_submissions_problem_id", "submissions", ["problem_id"])
    op.create_index("ix_submissions_dedupe", "submissions", ["problem_id", "source_hash", "submitter", "model"])
    op.create_index("ix_submissions_submitter", "submissions", ["submitter", "id"])
    op.create_index("ix_submissions_key_created", "submissions", ["api_key_id", "created_at"])
    op.create_table(
        "evaluations",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("submission_id", sa.Integer(), sa.ForeignKey("submissions.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("problem_id", sa.Integer(), sa.ForeignKey("problems.id", ondelete="RESTRICT"), nullable=False),
        sa.Column("requested_device", sa.String(60), nullable=False),
        sa.Column("device_class", sa.String(60), nullable=True),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("verdict", sa.String(20), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("lease_owner", sa.String(200), nullable=True),
        _time("lease_expires", nullable=True),
        sa.Column("result", JSON, nullable=True),
        sa.Column("speedup", sa.Float(), nullable=True),
        sa.Column("reference_median_ms", sa.Float(), nullable=True),
        sa.Column("candidate_median_ms", sa.Float(), nullable=True),
        sa.Column("error_code", sa.String(100), nullable=True),
        sa.Column("error_summary", sa.Text(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("device_name", sa.String(200), nullable=True),
        sa.Column("driver_version", sa.String(100), nullable=True),
        sa.Column("torch_version", sa.String(100), nullable=True),
        sa.Column("cuda_version", sa.String(100), nullable=True),
        sa.Column("sandbox", sa.String(40), nullable=True),
        sa.Column("host", sa.String(200), nullable=True),
        sa.Column("progress_stage", sa.String(40), nullable=True),
        sa.Column("progress_message", sa.String(500), nullable=True),
        sa.Column("progress_done", sa.Integer(), nullable=False),
        sa.Column("progress_total", sa.Integer(), nullable=False),
        _time("created_at"),
        _time("started_at", nullable=True),
        _time("finished_at", nullable=True),
    )
    op.create_index("ix_evaluations_submission_id", "evaluations", ["submission_id"])
    op.create_index("ix_evaluations_queue", "evaluations", ["status", "requested_device", "id"])
    op.create_index("ix_evaluations_board", "evaluations", ["problem_id", "verdict", "device_class", "speedup"])
    op.create_index("ix_evaluations_lease_owner", "evaluations", ["lease_owner"])
    op.create_table(
        "board_entries",
        sa.Column("problem_id", sa.Integer(), sa.ForeignKey("problems.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("device_class", sa.String(60), primary_key=True),
        sa.Column("submitter", sa.String(100), primary_key=True),
        sa.Column("model", sa.String(200), primary_key=True),
        sa.Column("best_speedup", sa.Float(), nullable=False),
        sa.Column("submission_id", sa.Integer(), sa.ForeignKey("submissions.id", ondelete="CASCADE"), nullable=False),
        sa.Column("reference_median_ms", sa.Float(), nullable=True),
        sa.Column("candidate_median_ms", sa.Float(), nullable=True),
        _time("finished_at", nullable=True),
    )
    op.create_index("ix_board_entries_rank", "board_entries", ["problem_id", "device_class", "best_speedup"])
    op.create_index("ix_board_entries_best", "board_entries", ["problem_id", "best_speedup"])
    op.create_table(
        "model_stats",
        sa.Column("problem_id", sa.Integer(), sa.ForeignKey("problems.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("device_class", sa.String(60), primary_key=True),
        sa.Column("model", sa.String(200), primary_key=True),
        sa.Column("finished", sa.Integer(), nullable=False),
        sa.Column("correct", sa.Integer(), nullable=False),
        sa.Column("flagged", sa.Integer(), nullable=False),
        sa.Column("best_speedup", sa.Float(), nullable=True),
    )


def downgrade() -> None:
    for table in ("model_stats", "board_entries", "evaluations", "submissions", "workers", "problems", "api_keys"):
        op.drop_table(table)
