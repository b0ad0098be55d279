"""Index claims and queued-run markers for the Celery executor.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "index_claims",
        sa.Column("document_id", sa.String(64), primary_key=True),
        sa.Column("owner", sa.String(200), nullable=False),
        sa.Column("claimed_at", TZ, nullable=False),
        sa.Column("expires_at", TZ, nullable=False),
    )
    op.create_table(
        "run_queue",
        sa.Column("source_id", sa.String(200), primary_key=True),
        sa.Column("task_id", sa.String(200), nullable=False),
        sa.Column("queued_at", TZ, nullable=False),
        sa.Column("expires_at", TZ, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("run_queue")
    op.drop_table("index_claims")
