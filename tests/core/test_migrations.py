"""The migrations create exactly the tables of ``manifest/schema.py`` (both engines).

A fresh manifest is migrated to head and compared with the metadata by Alembic's own
autogenerate comparison: a column, index or table added to one side only fails here.
"""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from headwater.manifest import schema
from headwater.manifest.store import Manifest


def test_migrations_at_head_match_the_schema(manifest_url: str) -> None:
    manifest = Manifest.open(manifest_url)
    try:
        with manifest.engine.connect() as conn:
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
