"""A workspace whose index is the pgvector sink, end to end on the real PostgreSQL +
pgvector of ``pg_embedded``: sync, search in every mode with ACLs, a change and a
delete synced again, reconcile clean, and an index that lost a document repaired.
(``sink_types`` names the class: the entry point needs the package reinstalled.)"""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from headwater import Workspace
from headwater.pipeline.embed.fake import FakeEmbedder
from headwater.sinks.pgvector import PgvectorSink
from headwater.types import SearchMode
from pg_embedded import fresh_schema, pgvector_database  # noqa: F401 - fixtures
from workspace_helpers import filesystem_source, write_config

pytestmark = pytest.mark.server


@pytest.fixture
def config(
    tmp_path: Path,
    corpus: Path,
    pgvector_database: str,  # noqa: F811
    fresh_schema: str,  # noqa: F811
) -> Path:
    index = (
        f'[[index]]\nname = "main"\ntype = "pgvector"\nurl = "{pgvector_database}"\n'
        f'schema = "{fresh_schema}"\n'
    )
    return write_config(
        tmp_path, manifest_url=None, indexes=index, sources=filesystem_source(corpus)
    )


def _open(config: Path) -> Workspace:
    return Workspace.open(config, embedder=FakeEmbedder(32), sink_types={"pgvector": PgvectorSink})


def test_sync_search_change_delete_and_reconcile(
    config: Path,
    corpus: Path,
    pgvector_database: str,  # noqa: F811
    fresh_schema: str,  # noqa: F811
) -> None:
    with _open(config) as ws:
        ws.sync()
        sink = ws.sink("main")
        assert isinstance(sink, PgvectorSink)
        assert len(list(sink.inventory())) == 5
        for mode in (SearchMode.KEYWORD, SearchMode.VECTOR, SearchMode.HYBRID):
            hits = ws.search("reimbursement limit for meals", groups=["staff"], mode=mode)
            assert hits, mode
            assert ws.search("reimbursement limit for meals", groups=["other"], mode=mode) == []
        keyword = ws.search("reimbursement", groups=["staff"], mode=SearchMode.KEYWORD)
        assert keyword[0].title == "Expenses"
        assert ws.reconcile()["sinks"]["main"]["in_sync"]

    (corpus / "guides" / "expenses.md").write_text("# Expenses\n\nMeals: 75 euros a day.\n")
    (corpus / "notes" / "deploy.txt").unlink()
    with _open(config) as ws:
        ws.sync()
        sink = ws.sink("main")
        assert len(list(sink.inventory())) == 4
        assert ws.search("deploys tuesdays", groups=["staff"], mode=SearchMode.KEYWORD) == []
        changed = ws.search("euros", groups=["staff"], mode=SearchMode.KEYWORD)
        assert [h.title for h in changed] == ["Expenses"] and "75" in changed[0].chunk
        assert ws.reconcile()["sinks"]["main"]["in_sync"]

    with psycopg.connect(pgvector_database, autocommit=True) as conn:  # lose one document
        conn.execute(
            f'DELETE FROM "{fresh_schema}".hw_main_documents WHERE document_id = '
            f'(SELECT document_id FROM "{fresh_schema}".hw_main LIMIT 1)'
        )
        conn.execute(
            f'DELETE FROM "{fresh_schema}".hw_main WHERE document_id NOT IN '
            f'(SELECT document_id FROM "{fresh_schema}".hw_main_documents)'
        )
    with _open(config) as ws:
        found = ws.reconcile()
        assert found["sinks"]["main"]["missing"] == 1
        assert ws.reconcile(repair=True)["sinks"]["main"]["repaired"] == 1
        assert ws.reconcile()["sinks"]["main"]["in_sync"]
