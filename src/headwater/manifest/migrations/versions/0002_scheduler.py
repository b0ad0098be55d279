"""Scheduler: who ran a run, why, and how much it fetched; per-source pause switch.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("owner", sa.String(200), nullable=True))
        batch.add_column(sa.Column("kind", sa.String(10), nullable=True))
        batch.add_column(sa.Column("fetched", sa.Integer, nullable=True))
    op.create_table(
        "source_schedule",
        sa.Column("source_id", sa.String(200), primary_key=True),
        sa.Column("paused", sa.Integer, nullable=False),
        sa.Column("changed_at", TZ, nullable=False),
        sa.Column("changed_by", sa.String(200), nullable=True),
    )


def downgrade() -> None:
    op.drop_table("source_schedule")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("fetched")
        batch.drop_column("kind")
        batch.drop_column("owner")
