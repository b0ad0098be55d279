"""Index generations: one row per (index, generation) with its state and settings.

Existing applied rows in ``document_indexes`` (keyed by the bare index name) are
generation 1 of their index; its row is recorded with the config's settings the first
time the workspace opens after the upgrade (the migration cannot know the config).

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "generations",
        sa.Column("index_name", sa.String(100), primary_key=True),
        sa.Column("generation", sa.Integer, primary_key=True),
        sa.Column("state", sa.String(12), nullable=False),
        sa.Column("index_version", sa.String(32), nullable=False),
        sa.Column("settings", sa.Text, nullable=False),
        sa.Column("created_at", TZ, nullable=False),
        sa.Column("switched_at", TZ, nullable=True),
        sa.Column("problems", sa.Text, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("generations")
