"""Hints: change notifications queued for a targeted read, and their per-source record.

``hints``: one row per (source, object) waiting to be read again (``object_id`` "" is a
scope hint: "something changed under this source", read by a sync). A burst of hints for
one object is one row (``count`` grows, ``due_at`` moves on by the debounce), removed once
a targeted read committed it. ``hint_sources``: per source, when the last hint arrived,
when the last targeted read ended and its lag, and how many hints were dropped as out of
the source's scope.

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "hints",
        sa.Column("source_id", sa.String(200), primary_key=True),
        sa.Column("object_key", sa.String(64), primary_key=True),
        sa.Column("object_id", sa.Text, nullable=False),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("origin", sa.String(30), nullable=False),
        sa.Column("count", sa.Integer, nullable=False),
        sa.Column("received_at", TZ, nullable=False),
        sa.Column("last_at", TZ, nullable=False),
        sa.Column("due_at", TZ, nullable=False),
    )
    op.create_index("ix_hints_due_at", "hints", ["due_at"])
    op.create_table(
        "hint_sources",
        sa.Column("source_id", sa.String(200), primary_key=True),
        sa.Column("last_hint_at", TZ, nullable=True),
        sa.Column("last_origin", sa.String(30), nullable=True),
        sa.Column("last_read_at", TZ, nullable=True),
        sa.Column("last_lag_s", sa.Float, nullable=True),
        sa.Column("received", sa.Integer, nullable=False),
        sa.Column("read", sa.Integer, nullable=False),
        sa.Column("dropped", sa.Integer, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("hint_sources")
    op.drop_index("ix_hints_due_at", table_name="hints")
    op.drop_table("hints")
