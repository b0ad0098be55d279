"""Group labels: each synced group's display name and mail, beside its stable principal.

``group_labels``: one row per (source, group principal) of the last complete group
listing, with the directory's display name and mail address when the source has them.
Groups are named in ACLs by the directory's stable id (a mail address or a name can be
changed and given to another group); the labels are only shown to people
(``search --explain``), never compared. Replaced whole with the source's memberships.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"


def upgrade() -> None:
    op.create_table(
        "group_labels",
        sa.Column("source_id", sa.String(200), primary_key=True),
        sa.Column("group_principal", sa.String(500), primary_key=True),
        sa.Column("display_name", sa.String(500), nullable=True),
        sa.Column("mail", sa.String(320), nullable=True),
    )


def downgrade() -> None:
    op.drop_table("group_labels")
