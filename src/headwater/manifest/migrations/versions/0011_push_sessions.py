"""Full-replace push sessions and pushed group memberships.

``push_sessions``: one row per session of a push source; ``active_source`` holds the
source id while the session is open (NULL once it is completed, aborted or expired), and
its unique index is what makes "one active session per source" hold across processes.
``push_session_objects``: the object ids a session sent (its complete deletes the
source's other documents). ``pushed_groups``: the version and state of each group pushed
through ``PUT /v1/groups/{source}/{group}`` (its members live in ``group_members``).

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "push_sessions",
        sa.Column("session_id", sa.String(36), primary_key=True),
        sa.Column("source_id", sa.String(200), nullable=False),
        sa.Column("active_source", sa.String(200), nullable=True),
        sa.Column("state", sa.String(12), nullable=False),
        sa.Column("opened_at", TZ, nullable=False),
        sa.Column("touched_at", TZ, nullable=False),
        sa.Column("closed_at", TZ, nullable=True),
        sa.Column("sent", sa.Integer, nullable=False, server_default="0"),
        sa.Column("deleted", sa.Integer, nullable=False, server_default="0"),
    )
    op.create_index(
        "ix_push_sessions_active_source", "push_sessions", ["active_source"], unique=True
    )
    op.create_index("ix_push_sessions_source", "push_sessions", ["source_id", "opened_at"])
    op.create_table(
        "push_session_objects",
        sa.Column("session_id", sa.String(36), primary_key=True),
        sa.Column("object_id", sa.Text, primary_key=True),
    )
    op.create_table(
        "pushed_groups",
        sa.Column("source_id", sa.String(200), primary_key=True),
        sa.Column("group_principal", sa.String(500), primary_key=True),
        sa.Column("version", sa.BigInteger, nullable=False),
        sa.Column("state", sa.String(10), nullable=False),
        sa.Column("updated_at", TZ, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("pushed_groups")
    op.drop_table("push_session_objects")
    op.drop_index("ix_push_sessions_source", table_name="push_sessions")
    op.drop_index("ix_push_sessions_active_source", table_name="push_sessions")
    op.drop_table("push_sessions")
