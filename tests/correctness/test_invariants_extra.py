"""Invariants 2, 12 and 13 stated directly: rebuild without the source, default deny,
streaming in bounded batches; and 4, 6 and 8 pinned with failing sinks injected through
``Workspace.open(sink_types=...)``."""

from __future__ import annotations

import logging
import shutil
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest
from sqlalchemy import select

from headwater import Workspace
from headwater.manifest.schema import tombstones
from headwater.pipeline.embed.fake import FakeEmbedder
from headwater.sinks.base import WriteOutcome
from headwater.sinks.sqlite import SqliteSink
from headwater.types import EmbeddedChunk, IndexDocument
from memory_connector import SOURCES, Item, MemoryConnector, MemorySource
from sink_faults import fail_midway
from workspace_helpers import filesystem_source, write_config


def test_an_index_is_rebuilt_from_the_manifest_without_touching_the_source(
    tmp_path: Path, corpus: Path
) -> None:
    config = write_config(tmp_path, manifest_url=None, sources=filesystem_source(corpus))
    with Workspace.open(config) as ws:
        ws.sync()
        before = ws.search("vacation days", groups=["staff"], mode="keyword")
    (tmp_path / "state" / "index-main.db").unlink()
    shutil.rmtree(corpus)  # the source is gone: only the manifest and content store remain
    with Workspace.open(config) as ws:
        assert ws.search("vacation days", groups=["staff"], mode="keyword") == []
        ws.reconcile(repair=True)
        after = ws.search("vacation days", groups=["staff"], mode="keyword")
        assert [h["chunk_id"] for h in after] == [h["chunk_id"] for h in before]


def test_an_index_whose_storage_was_lost_is_named_with_the_fix(
    tmp_path: Path, corpus: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = write_config(tmp_path, manifest_url=None, sources=filesystem_source(corpus))
    with Workspace.open(config) as ws:
        ws.sync()
    (tmp_path / "state" / "index-main.db").unlink()
    with caplog.at_level(logging.WARNING), Workspace.open(config) as ws:
        ws.sync()
    [warning] = [r.getMessage() for r in caplog.records if "created just now" in r.getMessage()]
    assert "'main@1'" in warning and "records 5 documents" in warning
    assert "headwater reconcile --repair" in warning
    caplog.clear()
    with caplog.at_level(logging.WARNING), Workspace.open(config) as ws:
        ws.reconcile(repair=True)
        assert ws.search("vacation days", groups=["staff"], mode="keyword")
    assert not [r for r in caplog.records if "created just now" in r.getMessage()]


def test_a_document_without_acl_is_visible_to_no_one(tmp_path: Path, corpus: Path) -> None:
    closed = f'[[source]]\nid = "closed"\ntype = "filesystem"\nroot = "{corpus}"\n'
    config = write_config(tmp_path, manifest_url=None, sources=closed)
    with Workspace.open(config) as ws:
        assert ws.sync().index.replaced == 5  # indexed, but for nobody
        assert ws.document(source="closed", object_id="readme.md")["access"] == {
            "users": [],
            "groups": [],
            "public": False,
        }
        for mode in ("hybrid", "vector", "keyword"):
            assert (
                ws.search("vacation", user="a@b.c", groups=["staff", "hr", "public"], mode=mode)
                == []
            )
            assert ws.search("vacation", mode=mode) == []


def test_the_runner_streams_a_source_in_committed_batches(tmp_path: Path) -> None:
    name = uuid.uuid4().hex
    SOURCES[name] = MemorySource(
        items={f"id-{n:04d}": Item(f"p{n}", f"text {n}") for n in range(300)}
    )
    committed_when_read: dict[int, int] = {}
    body = (
        f'[[source]]\nid = "mem"\ntype = "memory"\nname = "{name}"\nbatch_size = 10\n'
        "access = { public = true }\n"
    )
    config = write_config(tmp_path, manifest_url=None, sources=body)
    with Workspace.open(config, connector_types={"memory": MemoryConnector}) as ws:
        SOURCES[name].on_yield = lambda n: committed_when_read.__setitem__(
            n, ws.manifest.count_documents("mem")
        )
        ws.sync(index=False)
    # While the connector produced item n, everything up to the previous batch was already
    # committed: the runner never holds more than about one batch of the source.
    for n, committed in committed_when_read.items():
        assert committed >= n - 1 - 10, (n, committed)
    assert committed_when_read[300] >= 280


# ---- invariants 4, 6 and 8 pinned with sinks injected through ``sink_types`` ----------


class FlakySqlite(SqliteSink):
    """A sqlite index whose replace dies half-way while ``broken`` is set."""

    type_name: ClassVar[str] = "flaky"
    broken: ClassVar[bool] = False

    def replace(
        self, document: IndexDocument, chunks: Sequence[EmbeddedChunk], revision: int
    ) -> WriteOutcome:
        if not FlakySqlite.broken:
            return super().replace(document, chunks, revision)
        with fail_midway(self):
            return super().replace(document, chunks, revision)


class LeakySqlite(SqliteSink):
    """A sqlite index whose delete says APPLIED but removes nothing."""

    type_name: ClassVar[str] = "leaky"

    def delete(self, document_id: str, revision: int) -> WriteOutcome:
        return WriteOutcome.APPLIED


def typed_index(type_name: str) -> str:
    return f'[[index]]\nname = "main"\ntype = "{type_name}"\n'


def snippets(ws: Workspace, query: str, **kwargs: Any) -> list[str]:
    return [h["snippet"] for h in ws.search(query, groups=["staff"], **kwargs)]


def test_a_sink_failing_mid_replace_records_nothing_and_keeps_the_old_revision(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    config = write_config(
        tmp_path,
        manifest_url=manifest_url,
        indexes=typed_index("flaky"),
        sources=filesystem_source(corpus),
    )
    with Workspace.open(config, sink_types={"flaky": FlakySqlite}) as ws:
        ws.sync()
        (corpus / "guides" / "vacation.md").write_text("# Vacation\n\nThirty days from now on.\n")
        FlakySqlite.broken = True
        try:
            result = ws.sync()
        finally:
            FlakySqlite.broken = False
        assert result.index.failed >= 1 and result.index.replaced == 0
        assert {f.stage for f in ws.failures()} == {"index:main"}
        doc = ws.document(source="docs", object_id="guides/vacation.md")
        assert doc["revision"] == 2 and doc["indexes"]["main"]["applied_revision"] == 1
        assert any("25 vacation days" in s for s in snippets(ws, "vacation days", mode="keyword"))
        assert not snippets(ws, "thirty", mode="keyword")
        ws.index()
        doc = ws.document(source="docs", object_id="guides/vacation.md")
        assert doc["indexes"]["main"]["applied_revision"] == 2
        assert any("Thirty days" in s for s in snippets(ws, "thirty", mode="keyword"))


def test_a_changed_document_that_fails_to_embed_stays_searchable_in_its_old_version(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    config = write_config(
        tmp_path,
        manifest_url=manifest_url,
        indexes=(
            '[[index]]\nname = "lite"\ntype = "sqlite"\n\n'
            f'[[index]]\nname = "vectors"\ntype = "qdrant"\npath = "{tmp_path / "q"}"\n'
        ),
        sources=filesystem_source(corpus),
    )
    embedder = FakeEmbedder(32, fail_when=lambda text: "Thirty" in text)
    with Workspace.open(config, embedder=embedder) as ws:
        ws.sync()
        doc_id = ws.document(source="docs", object_id="guides/vacation.md")["document_id"]
        held = {name: ws.sink(name).count(doc_id) for name in ("lite", "vectors")}
        (corpus / "guides" / "vacation.md").write_text("# Vacation\n\nThirty days from now on.\n")
        assert ws.sync().index.failed == 1
        query = "Every employee gets 25 vacation days per year."
        for name in ("lite", "vectors"):
            assert ws.sink(name).count(doc_id) == held[name] > 0, name
            assert ws.sink(name).revision(doc_id) == 1, name
            found = ws.search(query, groups=["staff"], index=name, mode="vector")
            assert found and found[0]["document_id"] == doc_id, name


def test_a_delete_the_sink_did_not_carry_out_never_completes_the_tombstone(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    config = write_config(
        tmp_path,
        manifest_url=manifest_url,
        indexes=typed_index("leaky"),
        sources=filesystem_source(corpus),
    )
    with Workspace.open(config, sink_types={"leaky": LeakySqlite}) as ws:
        ws.sync()
        doc_id = ws.document(source="docs", object_id="guides/expenses.md")["document_id"]
        (corpus / "guides" / "expenses.md").unlink()
        result = ws.sync()
        assert result.index.failed >= 1 and result.index.deleted == 0
        assert [f.stage for f in ws.failures()] == ["delete:main"]
        with ws.manifest.engine.connect() as conn:
            row = conn.execute(select(tombstones).where(tombstones.c.document_id == doc_id)).one()
        assert row.completed_at is None
        doc = ws.document(doc_id)
        assert doc["indexes"]["main"]["applied_revision"] == 1 < doc["revision"]
