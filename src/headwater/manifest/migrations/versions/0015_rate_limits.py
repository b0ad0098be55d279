"""The rate-limit governor's shared budgets: ``rate_limits`` and ``rate_sources``.

``rate_limits``: one row per credential (the SHA-256 of its secret) with the GCRA state
of each of its rates and the end of the last 429's block. ``rate_sources``: the
credential each source used last (what `status` reads to name a throttled source).

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"


def upgrade() -> None:
    op.create_table(
        "rate_limits",
        sa.Column("credential_key", sa.String(64), primary_key=True),
        sa.Column("vendor", sa.String(100), nullable=False),
        sa.Column("tats", sa.Text(), nullable=False),
        sa.Column("blocked_until", sa.Float(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
    )
    op.create_table(
        "rate_sources",
        sa.Column("source_id", sa.String(200), primary_key=True),
        sa.Column("credential_key", sa.String(64), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("rate_sources")
    op.drop_table("rate_limits")
