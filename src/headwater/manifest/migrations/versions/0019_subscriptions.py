"""Vendor subscriptions the scheduler renews: ``subscriptions``.

One row per source and scope: a Microsoft Graph change-notification subscription (per
SharePoint library) or a Google Drive push channel (per Drive scope), with the vendor's
id, its expiry and the state of the last failed create or renewal (``failures``,
``last_error``, ``retry_at``), so a restart renews what the last process created and
``status`` shows a renewal that keeps failing.

Revision ID: 0019
Revises: 0018
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "subscriptions",
        sa.Column("source_id", sa.String(200), primary_key=True),
        sa.Column("scope", sa.String(200), primary_key=True),
        sa.Column("vendor_id", sa.String(200), nullable=False),
        sa.Column("resource_id", sa.String(200), nullable=False),
        sa.Column("expires_at", TZ, nullable=True),
        sa.Column("renewed_at", TZ, nullable=True),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("retry_at", TZ, nullable=True),
    )


def downgrade() -> None:
    op.drop_table("subscriptions")
