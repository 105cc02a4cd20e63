"""rate counters: requests per API key per fixed window, shared by every API process

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "rate_counters",
        sa.Column("bucket", sa.String(200), nullable=False),
        sa.Column("window_start", sa.BigInteger(), nullable=False, autoincrement=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("bucket", "window_start"),
    )
    op.create_index("ix_rate_counters_window", "rate_counters", ["window_start"])


def downgrade() -> None:
    op.drop_index("ix_rate_counters_window", table_name="rate_counters")
    op.drop_table("rate_counters")
