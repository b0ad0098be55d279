"""Two indexes on ``runs`` for ``headwater runs``: ``started_at``, and the short run id.

``headwater runs`` (and ``GET /runs``) without a source asks for the latest runs of every
source, ``ORDER BY started_at DESC LIMIT n``. ``ix_runs_source_started`` answers that only
for one source, so without this index the query read and sorted the whole history (a
scheduler running each source every minute keeps half a million rows a year). Found by
the EXPLAIN test, tests/core/test_manifest_explain.py, as was ``ix_runs_short_id``:
the listing then asks which runs share each shown 8-character prefix
(``substr(run_id, 1, 8) IN (...)``), which read every run without an index on that
expression.

Revision ID: 0016
Revises: 0015
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"


def upgrade() -> None:
    op.create_index("ix_runs_started", "runs", ["started_at"])
    op.create_index("ix_runs_short_id", "runs", [sa.text("substr(run_id, 1, 8)")])


def downgrade() -> None:
    op.drop_index("ix_runs_short_id", table_name="runs")
    op.drop_index("ix_runs_started", table_name="runs")
