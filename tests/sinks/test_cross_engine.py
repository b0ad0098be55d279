"""Engines side by side and one engine replaced by another (issue 25 item 5).

A workspace with a ``pgvector`` index (the real PostgreSQL + pgvector of ``pg_embedded``)
beside a ``meilisearch`` one (the fake) fans every search out to both and fuses in
``search/``; a ``sqlite`` index rebuilt as ``pgvector`` is built from stored content,
verified and switched, and rolled back to sqlite, searchable at every step.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fakes.meilisearch import FakeMeilisearch
from headwater import Workspace
from headwater.pipeline.embed.fake import FakeEmbedder
from headwater.sinks.meilisearch import MeilisearchSink
from headwater.sinks.pgvector import PgvectorSink
from headwater.sinks.sqlite import SqliteSink
from pg_embedded import fresh_schema, pgvector_database  # noqa: F401 - fixtures
from workspace_helpers import filesystem_source, write_config

pytestmark = pytest.mark.server
SINKS = {"pgvector": PgvectorSink, "meilisearch": MeilisearchSink}
QUERY = "reimbursement limit for meals"


def _titles(ws: Workspace, mode: str, index: str | None = None) -> list[str]:
    return [h.title for h in ws.search(QUERY, groups=["staff"], mode=mode, index=index)]


def test_a_search_fans_out_to_pgvector_and_meilisearch_and_fuses(
    tmp_path: Path,
    corpus: Path,
    pgvector_database: str,  # noqa: F811
    fresh_schema: str,  # noqa: F811
) -> None:
    with FakeMeilisearch() as fake:
        indexes = (
            f'[[index]]\nname = "vectors"\ntype = "pgvector"\nurl = "{pgvector_database}"\n'
            f'schema = "{fresh_schema}"\n'
            f'[[index]]\nname = "words"\ntype = "meilisearch"\nurl = "{fake.url}"\n'
        )
        config = write_config(
            tmp_path, manifest_url=None, indexes=indexes, sources=filesystem_source(corpus)
        )
        with Workspace.open(config, embedder=FakeEmbedder(32), sink_types=SINKS) as ws:
            ws.sync()
            for index in ("vectors", "words"):
                assert _titles(ws, "keyword", index)[0] == "Expenses", index
            fused = _titles(ws, "hybrid")
            assert fused[0] == "Expenses" and len(fused) == len(set(fused))
            assert ws.search(QUERY, groups=["other"], mode="hybrid") == []
            (corpus / "guides" / "expenses.md").unlink()
            ws.sync()
            assert "Expenses" not in _titles(ws, "hybrid")
            for index in ("vectors", "words"):
                assert "Expenses" not in _titles(ws, "keyword", index), index
            assert all(d.drifted == 0 for d in ws.reconcile().sinks.values())


def test_a_sqlite_index_is_rebuilt_as_pgvector_switched_and_rolled_back(
    tmp_path: Path,
    corpus: Path,
    pgvector_database: str,  # noqa: F811
    fresh_schema: str,  # noqa: F811
) -> None:
    config = write_config(tmp_path, manifest_url=None, sources=filesystem_source(corpus))
    with Workspace.open(config, embedder=FakeEmbedder(32), sink_types=SINKS) as ws:
        ws.sync()
        assert isinstance(ws.sink("main"), SqliteSink)
        before = _titles(ws, "keyword")
    moved = config.read_text().replace(
        'type = "sqlite"\n',
        f'type = "pgvector"\nurl = "{pgvector_database}"\nschema = "{fresh_schema}"\n',
    )
    config.write_text(moved)
    with Workspace.open(config, embedder=FakeEmbedder(32), sink_types=SINKS) as ws:
        assert any("rebuild" in w for w in ws.warnings())  # the sink type changed
        assert isinstance(ws.sink("main"), SqliteSink)  # still serving the old engine
        entry = ws.rebuild(["main"]).as_dict()["indexes"][0]
        assert entry["result"] == "switched", entry
        assert isinstance(ws.sink("main"), PgvectorSink)
        assert _titles(ws, "keyword") == before
        assert _titles(ws, "vector")
        ws.rebuild_rollback("main")
        assert isinstance(ws.sink("main"), SqliteSink)
        assert _titles(ws, "keyword") == before
