"""The migrations create exactly the tables of ``manifest/schema.py`` (both engines).

A fresh manifest is migrated to head and compared with the metadata by Alembic's own
autogenerate comparison: a column, index or table added to one side only fails here.
SQLite cannot reflect an expression index (``ix_runs_short_id``), so Alembic skips it
there with a warning; PostgreSQL compares it, and the SQLite side is checked by name.
"""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from headwater.manifest import schema
from headwater.manifest.store import Manifest


@pytest.mark.filterwarnings("ignore:.*expression-based index ix_runs_short_id")
@pytest.mark.filterwarnings("ignore:.*expression-based index 'ix_runs_short_id'")
def test_migrations_at_head_match_the_schema(manifest_url: str) -> None:
    manifest = Manifest.open(manifest_url)
    try:
        with manifest.engine.connect() as conn:
            if conn.dialect.name == "sqlite":
                names = {r[1] for r in conn.exec_driver_sql("PRAGMA index_list('runs')")}
                assert "ix_runs_short_id" in names
            context = MigrationContext.configure(conn, opts={"compare_type": False})
            diff = [
                d
                for d in compare_metadata(context, schema.metadata)
                if not (
                    isinstance(d, tuple)
                    and d[0] == "remove_table"
                    and d[1].name == "alembic_version"
                )
            ]
    finally:
        manifest.close()
    assert diff == []
