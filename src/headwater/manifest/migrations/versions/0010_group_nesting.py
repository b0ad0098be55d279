"""Nested groups: which group is a member of which, per source.

``group_nesting``: one row per (source, group principal, member group principal) of the
last complete group listing. A caller's groups are expanded through these edges,
transitively, at search time; replaced whole with the source's memberships.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"


def upgrade() -> None:
    op.create_table(
        "group_nesting",
        sa.Column("source_id", sa.String(200), primary_key=True),
        sa.Column("group_principal", sa.String(500), primary_key=True),
        sa.Column("member_group", sa.String(500), primary_key=True),
    )
    op.create_index("ix_group_nesting_member_group", "group_nesting", ["member_group"])


def downgrade() -> None:
    op.drop_index("ix_group_nesting_member_group", table_name="group_nesting")
    op.drop_table("group_nesting")
