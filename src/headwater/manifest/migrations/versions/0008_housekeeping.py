"""Housekeeping: an index on ``documents.checksum`` for the content-store garbage walk.

The walk asks, per prefix directory of the content store, which checksums of that
prefix active documents still point at: a range query that this index answers without
scanning the whole table.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

from alembic import op

revision = "0008"
down_revision = "0007"


def upgrade() -> None:
    op.create_index("ix_documents_checksum", "documents", ["checksum"])


def downgrade() -> None:
    op.drop_index("ix_documents_checksum", table_name="documents")
