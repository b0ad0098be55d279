"""The acceptance checklist of issue 4, each test named after its question.

Runs on SQLite and PostgreSQL manifests with two sinks (sqlite + qdrant local mode).
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from sqlalchemy import select

from headwater import Workspace
from headwater.manifest.schema import tombstones
from headwater.pipeline.embed.cache import CachedEmbedder, EmbeddingCache
from headwater.pipeline.embed.fake import FakeEmbedder
from memory_connector import SOURCES, Item, MemoryConnector, MemorySource
from workspace_helpers import filesystem_source, write_config


def sinks(directory: Path) -> str:
    return (
        '[[index]]\nname = "lite"\ntype = "sqlite"\n\n'
        f'[[index]]\nname = "vectors"\ntype = "qdrant"\npath = "{directory / "qdrant"}"\n'
    )


@pytest.fixture
def source() -> MemorySource:
    name = uuid.uuid4().hex
    SOURCES[name] = MemorySource(
        items={
            f"id-{n}": Item(
                path=f"folder/doc-{n}.txt", text=f"document {n} talks about topic {n}", sequence=10
            )
            for n in range(10)
        }
    )
    source = SOURCES[name]
    source.name = name  # type: ignore[attr-defined]
    return source


def open_memory(
    tmp_path: Path, manifest_url: str, source: MemorySource, fail_text: str | None = None
) -> Workspace:
    body = (
        f'[[source]]\nid = "mem"\ntype = "memory"\nname = "{source.name}"\n'  # type: ignore[attr-defined]
        'access = { groups = ["staff"] }\n'
    )
    config = write_config(
        tmp_path, manifest_url=manifest_url, sources=body, indexes=sinks(tmp_path)
    )
    embedder = CachedEmbedder(
        FakeEmbedder(16, fail_when=(lambda t: fail_text in t) if fail_text else None),
        EmbeddingCache(tmp_path / "cache.db"),
    )
    return Workspace.open(config, embedder=embedder, connector_types={"memory": MemoryConnector})


def manifest_state(ws: Workspace) -> dict[str, tuple[object, ...]]:
    state = {}
    for record in ws.manifest.documents_after("", 10_000):
        state[record.object_id] = (record.state, record.revision, record.checksum, record.signature)
    return state


def sink_state(ws: Workspace) -> dict[str, list[tuple[str, int, int]]]:
    return {
        name: sorted((r.document_id, r.revision, r.chunks) for r in ws.sink(name).inventory())
        for name in ("lite", "vectors")
    }


def test_1_same_event_applied_twice_leaves_identical_content_and_counts(
    tmp_path: Path, manifest_url: str, source: MemorySource
) -> None:
    with open_memory(tmp_path, manifest_url, source) as ws:
        ws.sync()
        before = (manifest_state(ws), sink_state(ws))
        again = ws.sync().runs[0]
        assert again.counts.unchanged == 10 and again.counts.new == again.counts.changed == 0
        assert (manifest_state(ws), sink_state(ws)) == before
        # The same object delivered twice within one run is applied once.
        source.items["id-11"] = Item(path="x.txt", text="duplicate delivery", sequence=1)
        original = MemoryConnector.read

        def twice(self, window, checkpoint, known):  # type: ignore[no-untyped-def]
            yield from original(self, window, checkpoint, known)
            yield from original(self, window, None, known)

        MemoryConnector.read = twice  # type: ignore[method-assign]
        try:
            run = ws.sync().runs[0]
        finally:
            MemoryConnector.read = original  # type: ignore[method-assign]
        assert run.counts.new == 1
        assert ws.document(source="mem", object_id="id-11")["revision"] == 1


def test_2_rename_keeps_the_document_id_where_the_source_has_stable_ids(
    tmp_path: Path, manifest_url: str, source: MemorySource
) -> None:
    with open_memory(tmp_path, manifest_url, source) as ws:
        ws.sync()
        before = ws.document(source="mem", object_id="id-3")
        source.items["id-3"].path = "elsewhere/renamed.txt"
        run = ws.sync().runs[0]
        assert run.counts.changed == 1 and run.counts.deleted == 0
        after = ws.document(source="mem", object_id="id-3")
        assert after["document_id"] == before["document_id"]
        assert after["locator"] == "memory://elsewhere/renamed.txt"
        assert after["revision"] == before["revision"] + 1
        for name in ("lite", "vectors"):
            hits = ws.search("document 3 topic 3", groups=["staff"], index=name, k=3)
            assert hits[0]["locator"] == "memory://elsewhere/renamed.txt"


def test_2_filesystem_move_is_a_delete_plus_a_create(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    for n in range(6):
        (corpus / f"pad-{n}.txt").write_text(f"pad {n}\n")
    config = write_config(tmp_path, manifest_url=manifest_url, sources=filesystem_source(corpus))
    with Workspace.open(config) as ws:
        ws.sync()
        old = ws.document(source="docs", object_id="readme.md")
        (corpus / "readme.md").rename(corpus / "notes" / "readme.md")
        run = ws.sync().runs[0]
        assert run.counts.new == 1 and run.counts.deleted == 1
        new = ws.document(source="docs", object_id="notes/readme.md")
        assert new["document_id"] != old["document_id"]
        assert ws.document(old["document_id"])["state"] == "deleted"


def test_3_an_older_upsert_arriving_late_is_rejected_by_the_version_gate(
    tmp_path: Path, manifest_url: str, source: MemorySource
) -> None:
    with open_memory(tmp_path, manifest_url, source) as ws:
        ws.sync()
        source.items["id-1"] = Item(path="folder/doc-1.txt", text="newer text", sequence=20)
        assert ws.sync().runs[0].counts.changed == 1
        source.items["id-1"] = Item(
            path="folder/doc-1.txt", text="stalewordzz content", sequence=15
        )
        late = ws.sync().runs[0]
        assert late.counts.stale == 1 and late.counts.changed == 0
        assert ws.search("stalewordzz", groups=["staff"], mode="keyword") == []
        # An explicit delete at sequence 30, then an upsert at 25: still deleted.
        source.explicit_deletes = [("id-1", 30)]
        assert ws.sync().runs[0].counts.deleted == 1
        source.explicit_deletes = []
        source.items["id-1"] = Item(path="folder/doc-1.txt", text="resurrected?", sequence=25)
        assert ws.sync().runs[0].counts.stale == 1
        assert ws.document(source="mem", object_id="id-1")["state"] == "deleted"
        # A newer upsert re-creates the document and clears the tombstone.
        source.items["id-1"] = Item(path="folder/doc-1.txt", text="back for real", sequence=31)
        assert ws.sync().runs[0].counts.new == 1
        doc = ws.document(source="mem", object_id="id-1")
        assert doc["state"] == "active"
        with ws.manifest.engine.connect() as conn:
            assert (
                conn.execute(
                    select(tombstones).where(tombstones.c.document_id == doc["document_id"])
                ).first()
                is None
            )
        assert ws.search("back for real", groups=["staff"], mode="keyword")


def test_4_an_enumeration_that_fails_half_way_deletes_nothing(
    tmp_path: Path, manifest_url: str, source: MemorySource
) -> None:
    with open_memory(tmp_path, manifest_url, source) as ws:
        ws.sync()
        del source.items["id-9"]
        source.fail_enumerate_after = 5
        run = ws.sync().runs[0]
        assert run.counts.deleted == 0
        assert run.as_dict()["deletes"] == "enumeration_failed"
        assert ws.status()["sources"][0]["documents"] == 10
        source.fail_enumerate_after = None
        assert ws.sync().runs[0].counts.deleted == 1


def test_4_a_read_that_fails_half_way_deletes_nothing(
    tmp_path: Path, manifest_url: str, source: MemorySource
) -> None:
    with open_memory(tmp_path, manifest_url, source) as ws:
        ws.sync()
        del source.items["id-0"]
        source.fail_read_after = 4
        run = ws.sync().runs[0]
        assert run.status == "failed" and "source broke" in (run.error or "")
        assert ws.status()["sources"][0]["documents"] == 10


def test_5_after_a_delete_the_document_is_gone_from_every_sink_verified_with_a_ledger(
    tmp_path: Path, manifest_url: str, source: MemorySource
) -> None:
    with open_memory(tmp_path, manifest_url, source) as ws:
        ws.sync()
        doc_id = ws.document(source="mem", object_id="id-4")["document_id"]
        source.explicit_deletes = [("id-4", None)]
        result = ws.sync()
        assert result.runs[0].counts.deleted == 1 and result.index.deleted == 2
        for name in ("lite", "vectors"):
            assert ws.sink(name).count(doc_id) == 0
            assert ws.sink(name).revision(doc_id) is None
            assert all(
                h["document_id"] != doc_id
                for h in ws.search("document 4 topic 4", groups=["staff"], index=name)
            )
        with ws.manifest.engine.connect() as conn:
            row = conn.execute(select(tombstones).where(tombstones.c.document_id == doc_id)).one()
        assert row.reason == "deleted_in_source"
        assert row.detected_at is not None and row.completed_at is not None
        assert row.completed_at >= row.detected_at


def test_7_the_dlq_shows_the_failing_stage_and_redrive_resolves_it(
    tmp_path: Path, manifest_url: str, source: MemorySource
) -> None:
    source.items["id-5"].text = "poison text that the embedder rejects"
    with open_memory(tmp_path, manifest_url, source, fail_text="poison") as ws:
        ws.sync()  # a rejected input is a permanent error: straight to the DLQ
        dead = ws.manifest.failures.list(statuses=("dead",))
        assert [(e.object_id, e.stage, e.attempts) for e in dead] == [("id-5", "embed", 1)]
        assert ws.status()["dlq"]["depth"] == 1
        # Dead-lettered work is not retried by every index pass.
        assert ws.index().failed == 0
    with open_memory(tmp_path, manifest_url, source) as ws:  # the cause is fixed
        report = ws.redrive([dead[0].entry_id])
        assert report == {"redriven": 1, "resolved": 1, "still_failing": 0}
        doc = ws.document(source="mem", object_id="id-5")
        assert doc["indexes"]["lite"]["applied_revision"] == doc["revision"]
        assert doc["indexes"]["vectors"]["applied_revision"] == doc["revision"]
        assert ws.status()["dlq"]["depth"] == 0


def test_7_a_fixed_file_resolves_its_dlq_entry_on_the_next_sync(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    (corpus / "report.pdf").write_bytes(b"%PDF-1.4 not really")
    config = write_config(tmp_path, manifest_url=manifest_url, sources=filesystem_source(corpus))
    with Workspace.open(config) as ws:
        ws.sync()
        (entry,) = ws.manifest.failures.list(statuses=("dead",))
        assert (entry.stage, entry.error_class) == ("parse", "parse_error")
        (corpus / "report.pdf").unlink()
        (corpus / "report.pdf").write_bytes(_tiny_pdf("Quarterly report on docking stations"))
        run = ws.sync().runs[0]
        assert run.counts.new == 1 and run.counts.failed == 0
        assert ws.manifest.failures.get(entry.entry_id).status == "resolved"  # type: ignore[union-attr]


def _tiny_pdf(text: str) -> bytes:
    import io

    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    page = canvas.Canvas(buffer)
    page.drawString(72, 720, text)
    page.save()
    return buffer.getvalue()
