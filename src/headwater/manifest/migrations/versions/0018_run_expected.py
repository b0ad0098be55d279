"""``runs.expected``: how many items a running sync's listing expects, when the API says.

A connector whose API answers a total (ServiceNow's ``X-Total-Count``, Jira's approximate
count) reports it while it reads; the runner saves it with the run's counts at each
checkpoint, so ``status`` (from any process) shows the running sync's ETA. Null when the
API gives no total.

Revision ID: 0018
Revises: 0017
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("expected", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("expected")
