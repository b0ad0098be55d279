"""The change-event outbox: events written in the same transaction as the change.

``events_outbox``: one row per change event (a document upserted, deleted or
re-permissioned; an index that applied a revision), in commit order (``seq``). The
publisher (``headwater.events``) sends them in that order and deletes them once the
broker confirmed them. Written only while ``[events]`` is configured.

Revision ID: 0014
Revises: 0013
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"


def upgrade() -> None:
    op.create_table(
        "events_outbox",
        sa.Column("seq", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("source_id", sa.String(200), nullable=False),
        sa.Column("object_id", sa.Text, nullable=False),
        sa.Column("document_id", sa.String(64), nullable=False),
        sa.Column("revision", sa.Integer, nullable=False),
        sa.Column("acl", sa.Text, nullable=True),
        sa.Column("index_name", sa.String(100), nullable=True),
        sa.Column("generation", sa.Integer, nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("events_outbox")
