"""Housekeeping and operator state: a checksum index, last permission syncs, takeovers.

``ix_documents_checksum``: the content-store garbage walk asks, per prefix directory of
the store, which checksums of that prefix active documents still point at: a range query
this index answers without scanning the whole table. ``source_schedule.
last_permissions_at``: when the scheduler last ran a source's permission sync, so a
restarted ``headwater run`` does not run every permission sync at once.
``leases.released`` and ``leases.takeovers``: whether the holder released its lease, and
how often a lease was taken over after its holder let it expire (or died) unreleased,
the ``headwater_lease_takeovers_total`` metric.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"


TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_index("ix_documents_checksum", "documents", ["checksum"])
    with op.batch_alter_table("source_schedule") as batch:
        batch.add_column(sa.Column("last_permissions_at", TZ, nullable=True))
    with op.batch_alter_table("leases") as batch:
        batch.add_column(sa.Column("released", sa.Integer, nullable=False, server_default="1"))
        batch.add_column(sa.Column("takeovers", sa.Integer, nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("leases") as batch:
        batch.drop_column("takeovers")
        batch.drop_column("released")
    with op.batch_alter_table("source_schedule") as batch:
        batch.drop_column("last_permissions_at")
    op.drop_index("ix_documents_checksum", table_name="documents")
