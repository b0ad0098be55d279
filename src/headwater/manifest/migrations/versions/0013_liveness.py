"""Heartbeats of schedulers and workers, and persisted monotonic counters.

``heartbeats``: one row per scheduler or worker process, stamped on a timer (the admin
page's liveness line). ``counters``: counts that survive pruning of what they count
(``runs_total`` per source and status, bumped when a run ends; seeded here from the
runs the history still holds).

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"


def upgrade() -> None:
    op.create_table(
        "heartbeats",
        sa.Column("owner", sa.String(200), primary_key=True),
        sa.Column("role", sa.String(20), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("seen_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "counters",
        sa.Column("name", sa.String(100), primary_key=True),
        sa.Column("key", sa.String(400), primary_key=True),
        sa.Column("value", sa.BigInteger(), nullable=False),
    )
    # Runs that ended before this migration count too (what history is still kept).
    op.execute(
        "INSERT INTO counters (name, key, value) "
        "SELECT 'runs_total', source_id || '|' || status, COUNT(*) FROM runs "
        "WHERE status <> 'running' GROUP BY source_id, status"
    )


def downgrade() -> None:
    op.drop_table("counters")
    op.drop_table("heartbeats")
