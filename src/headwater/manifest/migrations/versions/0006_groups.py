"""Group memberships synced from sources, expanded into a caller's principals at search.

``group_members``: one row per (source, group principal, member email). A source's rows
are replaced whole, in one transaction, after each complete group listing.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"


def upgrade() -> None:
    op.create_table(
        "group_members",
        sa.Column("source_id", sa.String(200), primary_key=True),
        sa.Column("group_principal", sa.String(500), primary_key=True),
        sa.Column("member", sa.String(320), primary_key=True),
    )
    op.create_index("ix_group_members_member", "group_members", ["member"])


def downgrade() -> None:
    op.drop_index("ix_group_members_member", table_name="group_members")
    op.drop_table("group_members")
