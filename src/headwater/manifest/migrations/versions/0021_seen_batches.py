"""A no-op writes no row per unchanged object: ``seen_batches`` and ``unseen_documents``.

A complete read proved each listed object's presence by setting its row's
``last_seen_run``, so a no-op of N objects was N row updates: on PostgreSQL each a new
tuple version with an entry in every index of ``documents`` (rarely HOT: a batch marks
every row of a page in one transaction) and a dead one for VACUUM. Now a batch stores
the object ids it listed unchanged as one sorted JSON array in ``seen_batches``, and the
prune after a complete read collects the source's active documents that neither those
lists nor ``last_seen_run`` (still set on every row a batch writes) name into
``unseen_documents``, in one statement; its candidates are read from there. Both tables
hold a run's scratch only, cleared when the run finishes.

A run interrupted before this migration and resumed after it keeps both proofs: its
earlier batches' marks and its later batches' lists.

Revision ID: 0021
Revises: 0020
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"


def upgrade() -> None:
    op.create_table(
        "seen_batches",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.String(36), nullable=False),
        sa.Column("object_ids", sa.Text(), nullable=False),
    )
    op.create_index("ix_seen_batches_run_id", "seen_batches", ["run_id"])
    op.create_table(
        "unseen_documents",
        sa.Column("run_id", sa.String(36), primary_key=True),
        sa.Column("document_id", sa.String(64), primary_key=True),
    )


def downgrade() -> None:
    op.drop_table("unseen_documents")
    op.drop_index("ix_seen_batches_run_id", table_name="seen_batches")
    op.drop_table("seen_batches")
