"""Runs keep their time per phase: ``phases``, a JSON object of seconds.

``{"read": s, "fetch_parse": s, "commit": s, "prune": s}`` (``sync/phases.py``), written
when the run ends, so the run page, ``headwater runs show`` and ``GET /v1/runs/{id}``
can say where a slow run spent its time. Runs recorded before this revision, and runs
that never started (an index could not be opened), have none (NULL).

Revision ID: 0017
Revises: 0016
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("phases", sa.Text, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("phases")
