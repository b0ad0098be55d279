"""Manifest identity, revision floors, and the revision a failure was recorded at.

- ``manifest_identity``: one row, the id generated when the manifest was created; every
  index is bound to it, so an index never serves under a manifest it does not belong to.
- ``revision_floors``: the last revision of a document whose tombstone was purged; a
  document re-created with that id starts above it (revisions never go backwards).
- ``failures.revision``: the document revision that failed; a dead-letter entry blocks
  that revision, never a newer one.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    identity = op.create_table(
        "manifest_identity",
        sa.Column("manifest_id", sa.String(36), primary_key=True),
        sa.Column("created_at", TZ, nullable=False),
    )
    op.bulk_insert(identity, [{"manifest_id": str(uuid.uuid4()), "created_at": datetime.now(UTC)}])
    op.create_table(
        "revision_floors",
        sa.Column("document_id", sa.String(64), primary_key=True),
        sa.Column("revision", sa.Integer, nullable=False),
    )
    with op.batch_alter_table("failures") as batch:
        batch.add_column(sa.Column("revision", sa.Integer, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("failures") as batch:
        batch.drop_column("revision")
    op.drop_table("revision_floors")
    op.drop_table("manifest_identity")
