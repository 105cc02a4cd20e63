"""compiled baselines: the compiled_baselines table, and speedup_vs_compiled on evaluations and board_entries

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-28
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "compiled_baselines",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("problem_id", sa.Integer(), sa.ForeignKey("problems.id", ondelete="CASCADE"), nullable=False),
        sa.Column("device_class", sa.String(60), nullable=False),
        sa.Column("torch_version", sa.String(100), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("median_ms", sa.Float(), nullable=True),
        sa.Column("measured_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("baseline", JSON, nullable=False),
    )
    op.create_index("ix_compiled_baselines_lookup", "compiled_baselines",
                    ["problem_id", "device_class", "torch_version", "measured_at"])
    op.add_column("evaluations", sa.Column("speedup_vs_compiled", sa.Float(), nullable=True))
    op.add_column("board_entries", sa.Column("speedup_vs_compiled", sa.Float(), nullable=True))


def downgrade() -> None:
    # Batch mode: SQLite drops a column by copying the table.
    for table in ("board_entries", "evaluations"):
        with op.batch_alter_table(table) as batch:
            batch.drop_column("speedup_vs_compiled")
    op.drop_index("ix_compiled_baselines_lookup", table_name="compiled_baselines")
    op.drop_table("compiled_baselines")
