"""Reconcile, DLQ attempts, the between-sinks failpoint, and the prune/dlq CLI."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from headwater import Workspace
from headwater.errors import IndexOwnedElsewhere
from headwater.manifest.index_state import Applied
from headwater.manifest.records import FailureWrite
from headwater.types import Access, Chunk, EmbeddedChunk, IndexDocument
from workspace_helpers import filesystem_source, write_config

FAKE = '[embedder]\ntype = "fake"\ndimension = 16\n'


def two_sinks(directory: Path) -> str:
    return (
        '[[index]]\nname = "lite"\ntype = "sqlite"\n\n'
        f'[[index]]\nname = "vectors"\ntype = "qdrant"\npath = "{directory / "qdrant"}"\n'
    )


def cli(
    directory: Path, *args: str, failpoint: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("HEADWATER_FAILPOINTS", None)
    if failpoint:
        env["HEADWATER_FAILPOINTS"] = failpoint
    return subprocess.run(
        [sys.executable, "-m", "headwater.cli", *args],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_transient_failures_retry_then_dead_letter(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    config = write_config(
        tmp_path, manifest_url=manifest_url, embedder=FAKE, sources=filesystem_source(corpus)
    )
    with Workspace.open(config) as ws:
        failure = FailureWrite(
            source_id="docs",
            object_id="x",
            document_id="d" * 64,
            locator="x",
            stage="fetch",
            error_class="transient",
            message="timed out",
            pipeline_version="p",
            source_version="v",
            fetch_ref=None,
            permanent=False,
        )
        statuses = []
        for _ in range(3):
            ws.manifest.failures.record([failure])
            (entry,) = ws.manifest.failures.list()
            statuses.append((entry.status, entry.attempts))
        assert statuses == [("retrying", 1), ("retrying", 2), ("dead", 3)]


def test_reconcile_finds_and_repairs_a_lost_index_and_an_orphan(
    tmp_path: Path, corpus: Path
) -> None:
    config = write_config(
        tmp_path,
        manifest_url=None,
        embedder=FAKE,
        indexes=two_sinks(tmp_path),
        sources=filesystem_source(corpus),
    )
    with Workspace.open(config) as ws:
        ws.sync()
        clean = ws.reconcile()
        assert all(s["in_sync"] for s in clean["sinks"].values())
        assert clean["sinks"]["lite"]["checked"] == 5
        orphan = IndexDocument("f" * 64, "docs", "ghost", "ghost://", Access(public=True))
        chunk = Chunk(
            "00000000-0000-0000-0000-000000000001", "f" * 64, 0, "ghost text", "ghost text"
        )
        ws.sink("vectors").replace(orphan, [EmbeddedChunk(chunk, [0.25] * 16)], 1)
    (tmp_path / "state" / "index-lite.db").unlink()  # the embedded index is lost
    with Workspace.open(config) as ws:
        found = ws.reconcile()
        assert found["sinks"]["lite"]["missing"] == 5 and not found["sinks"]["lite"]["in_sync"]
        assert found["sinks"]["vectors"]["orphans"] == 1
        repaired = ws.reconcile(repair=True)
        assert repaired["sinks"]["lite"]["repaired"] == 5
        assert repaired["sinks"]["vectors"]["repaired"] == 1
        after = ws.reconcile()
        assert all(s["in_sync"] for s in after["sinks"].values()), after
        assert ws.search("vacation days", groups=["staff"], index="lite")
        assert ws.sink("vectors").count("f" * 64) == 0


def test_failure_between_two_sinks_shows_which_is_behind_and_index_repairs(
    tmp_path: Path, corpus: Path
) -> None:
    write_config(
        tmp_path,
        manifest_url=None,
        embedder=FAKE,
        indexes=two_sinks(tmp_path),
        sources=filesystem_source(corpus),
    )
    killed = cli(tmp_path, "sync", "--json", failpoint="between_sinks")
    assert killed.returncode == -9
    status = json.loads(cli(tmp_path, "status", "--json").stdout)
    assert status["indexes"]["lite"]["pending"] == 0
    assert status["indexes"]["vectors"]["pending"] == 5
    drained = cli(tmp_path, "index", "--json")
    assert drained.returncode == 0, drained.stderr
    assert json.loads(drained.stdout)["documents"]["replaced"] == 5
    status = json.loads(cli(tmp_path, "status", "--json").stdout)
    assert status["indexes"]["vectors"]["pending"] == 0


def test_prune_and_dlq_commands(tmp_path: Path, corpus: Path) -> None:
    (corpus / "bad.pdf").write_bytes(b"%PDF garbage")
    write_config(tmp_path, manifest_url=None, embedder=FAKE, sources=filesystem_source(corpus))
    assert cli(tmp_path, "sync").returncode == 0
    entries = json.loads(cli(tmp_path, "dlq", "list", "--json").stdout)["entries"]
    assert [(e["object_id"], e["stage"]) for e in entries] == [("bad.pdf", "parse")]
    shown = json.loads(cli(tmp_path, "dlq", "show", str(entries[0]["id"]), "--json").stdout)
    assert shown["error_class"] == "parse_error"
    assert (
        json.loads(cli(tmp_path, "dlq", "list", "--stage", "embed", "--json").stdout)["entries"]
        == []
    )
    (corpus / "guides" / "expenses.md").unlink()
    dry = json.loads(cli(tmp_path, "prune", "--dry-run", "--json").stdout)["prunes"][0]
    assert dry["status"] == "dry_run" and dry["candidates"] == 1
    assert dry["would_delete"] == ["guides/expenses.md"]
    # 5 files and bad.pdf's metadata-only document (docs/pipeline.md, "Findable when unreadable")
    assert json.loads(cli(tmp_path, "status", "--json").stdout)["sources"][0]["documents"] == 6
    done = json.loads(cli(tmp_path, "prune", "--json").stdout)["prunes"][0]
    assert done["deleted"] == 1
    assert json.loads(cli(tmp_path, "status", "--json").stdout)["sources"][0]["documents"] == 5
    unknown = cli(tmp_path, "dlq", "drop", str(entries[0]["id"]), "99999")
    assert unknown.returncode == 2 and "no DLQ entry #99999" in unknown.stderr
    dropped = cli(tmp_path, "dlq", "drop", str(entries[0]["id"]))  # the unknown id dropped none
    assert dropped.returncode == 0 and "dropped 1" in dropped.stdout
    assert cli(tmp_path, "dlq", "show", str(entries[0]["id"])).returncode == 2
    assert cli(tmp_path, "dlq", "redrive").returncode == 2


def docs_in(ws: Workspace, query: str, groups: list[str], index: str) -> set[str]:
    return {h["document_id"] for h in ws.search(query, groups=groups, index=index)}


def test_a_document_re_created_after_its_tombstone_was_purged_is_searchable(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    config = write_config(
        tmp_path,
        manifest_url=manifest_url,
        embedder=FAKE,
        indexes=two_sinks(tmp_path),
        extra="[sync]\ntombstone_retention_days = 0\n",
        sources=filesystem_source(corpus),
    )
    expenses = corpus / "guides" / "expenses.md"
    text = expenses.read_text()
    with Workspace.open(config) as ws:
        ws.sync()
        doc_id = ws.document(source="docs", object_id="guides/expenses.md")["document_id"]
        expenses.unlink()
        ws.sync()  # tombstone, delete, verify, complete, then purge (retention 0)
        assert ws.manifest.document(doc_id) is None
        purged_at = 2  # revision 1 created it, revision 2 deleted it
        gone = IndexDocument(doc_id, "docs", "t", "l", Access(public=True))
        for name in ("lite", "vectors"):  # the sinks were told to forget the tombstone
            assert ws.sink(name).replace(gone, [], 1).value == "applied"
            ws.sink(name).delete(doc_id, purged_at)  # as they held it before
        expenses.write_text(text)
        ws.sync()
        record = ws.manifest.document(doc_id)
        assert record is not None and record.revision > purged_at  # never backwards
        for name in ("lite", "vectors"):
            assert doc_id in docs_in(ws, "reimbursement limit meals", ["staff"], name), name
        assert all(s["in_sync"] for s in ws.reconcile()["sinks"].values())
        assert ws.failures() == []


def test_a_dead_letter_entry_does_not_block_a_newer_revision(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    config = write_config(
        tmp_path, manifest_url=manifest_url, embedder=FAKE, sources=filesystem_source(corpus)
    )
    with Workspace.open(config) as ws:
        ws.sync()
        record = ws.manifest.document_by_object("docs", "guides/expenses.md")
        assert record is not None
        dead = FailureWrite(
            source_id="docs",
            object_id=record.object_id,
            document_id=record.document_id,
            locator=record.locator,
            stage="index:main",
            error_class="stale_in_sink",
            message="refused",
            pipeline_version="p",
            source_version=None,
            fetch_ref=None,
            permanent=True,
            revision=record.revision,
        )
        ws.manifest.failures.record([dead])
        (corpus / "guides" / "expenses.md").write_text("# Expenses\n\nTaxi receipts count.\n")
        ws.sync()
        assert record.document_id in docs_in(ws, "taxi receipts", ["staff"], "main")
        applied = ws.document(record.document_id)["indexes"]["main"]["applied_revision"]
        assert applied == record.revision + 1


def test_an_acl_change_on_a_document_an_index_lost_rewrites_it(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    def config(groups: str) -> Path:
        return write_config(
            tmp_path,
            manifest_url=manifest_url,
            embedder=FAKE,
            indexes=two_sinks(tmp_path),
            sources=filesystem_source(corpus, access=f'{{ groups = ["{groups}"] }}'),
        )

    with Workspace.open(config("staff")) as ws:
        ws.sync()
    (tmp_path / "state" / "index-lite.db").unlink()  # the embedded index is lost
    with Workspace.open(config("hr")) as ws:
        result = ws.sync()
        assert result.index.failed == 0
        for name in ("lite", "vectors"):
            assert docs_in(ws, "vacation days", ["hr"], name), name
            assert not docs_in(ws, "vacation days", ["staff"], name), name
        assert all(s["in_sync"] for s in ws.reconcile()["sinks"].values())
        vacation = ws.document(source="docs", object_id="guides/vacation.md")
        assert vacation["indexes"]["lite"]["chunks"] > 0


def test_reconcile_counts_an_applied_document_with_no_chunks_as_missing(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    config = write_config(
        tmp_path, manifest_url=manifest_url, embedder=FAKE, sources=filesystem_source(corpus)
    )
    with Workspace.open(config) as ws:
        ws.sync()
        pw = ws.manifest.index_state.pending("main", "none", limit=1)[0]  # any document
        record = pw.document
        version = ws.indexes.version(ws.index_sections[0])
        zero = Applied(record.document_id, record.revision, record.signature, version, 0)
        ws.manifest.index_state.record_applied("main", [zero])  # as the old ABSENT bug did
    (tmp_path / "state" / "index-main.db").unlink()
    with Workspace.open(config) as ws:
        found = ws.reconcile()["sinks"]["main"]
        assert not found["in_sync"] and found["missing"] == 5, found
        ws.reconcile(repair=True)
        assert ws.reconcile()["sinks"]["main"]["in_sync"]


def test_repair_after_a_crash_before_the_record_re_applies_active_documents(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    config = write_config(
        tmp_path,
        manifest_url=manifest_url,
        embedder=FAKE,
        indexes=two_sinks(tmp_path),
        sources=filesystem_source(corpus),
    )
    killed = cli(tmp_path, "sync", failpoint="after_sink_write_before_record")
    assert killed.returncode == -9, killed.stderr
    with Workspace.open(config) as ws:
        found = ws.reconcile()["sinks"]["lite"]
        assert found["orphans"] == 0 and found["unconfirmed"] == 5, found
        ws.reconcile(repair=True)
        after = ws.reconcile()
        assert all(s["in_sync"] for s in after["sinks"].values()), after
        for name in ("lite", "vectors"):
            assert docs_in(ws, "vacation days", ["staff"], name), name
        # The killed run is resumed from its checkpoint, which may already be past every
        # file (the kill races the checkpoint's save): finish it before the edit.
        ws.sync()
        (corpus / "guides" / "vacation.md").write_text("# Vacation\n\nThirty days now.\n")
        result = ws.sync()
        assert result.index.failed == 0 and ws.failures() == []
        for name in ("lite", "vectors"):
            hits = ws.search("thirty days", groups=["staff"], index=name)
            assert any("Thirty days" in h["snippet"] for h in hits), name


def test_an_index_of_a_lost_manifest_never_serves_its_old_permissions(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    def config(url: str, groups: str) -> Path:
        return write_config(
            tmp_path,
            manifest_url=url,
            embedder=FAKE,
            indexes=two_sinks(tmp_path),
            sources=filesystem_source(corpus, access=f'{{ groups = ["{groups}"] }}'),
        )

    with Workspace.open(config(manifest_url, "staff")) as ws:
        ws.sync()
        expenses = ws.document(source="docs", object_id="guides/expenses.md")["document_id"]
        assert expenses in docs_in(ws, "reimbursement limit", ["staff"], "lite")
    (corpus / "guides" / "expenses.md").unlink()
    fresh = f"sqlite:///{tmp_path / 'fresh-manifest.db'}"  # the old manifest is lost
    with Workspace.open(config(fresh, "hr")) as ws:
        for name in ("lite", "vectors"):  # refused, never served: nothing of the old manifest
            with pytest.raises(IndexOwnedElsewhere):
                docs_in(ws, "vacation days", ["staff"], name)
        with pytest.raises(IndexOwnedElsewhere):
            ws.sync()
        ws.sync(index=False)  # the new manifest learns the sources, the indexes untouched
        assert ws.take_over_indexes(empty=False) == ["lite@1", "vectors@1"]  # --adopt
        ws.reconcile(repair=True)
        ws.index()
        for name in ("lite", "vectors"):
            assert docs_in(ws, "vacation days", ["hr"], name), name
            assert not docs_in(ws, "vacation days", ["staff"], name), name
            assert expenses not in docs_in(ws, "reimbursement limit", ["hr", "staff"], name)
        assert all(s["in_sync"] for s in ws.reconcile()["sinks"].values())


def finds(ws: Workspace, word: str, index: str) -> bool:
    """Whether a search of ``index`` returns a chunk holding ``word``."""
    mode = "keyword" if index == "lite" else "vector"  # the qdrant one has no keywords
    hits = ws.search(word, groups=["staff"], index=index, mode=mode, k=50, per_document=False)
    return any(word in h["chunk"] for h in hits)


def test_repair_after_restoring_an_older_manifest_brings_later_edits_back(
    tmp_path: Path, corpus: Path
) -> None:
    """The documented recovery (restore the manifest from a backup, reconcile --repair)
    when the indexes hold newer revisions than the backup: repair raises the manifest's
    revisions above them, so the current text is indexed, now and after later edits,
    instead of every write being refused as stale and the old text served for good."""
    config = write_config(
        tmp_path,
        manifest_url=None,
        embedder=FAKE,
        indexes=two_sinks(tmp_path),
        sources=filesystem_source(corpus),
    )
    note = corpus / "notes" / "restore.txt"
    note.write_text("first words\n")
    assert cli(tmp_path, "sync").returncode == 0
    manifest = tmp_path / "state" / "manifest.db"
    backup = tmp_path / "backup.db"
    with closing(sqlite3.connect(manifest)) as source, closing(sqlite3.connect(backup)) as copy:
        source.backup(copy)
    for n in range(2):  # the indexes move on to revision 3
        note.write_text(f"edited words number{n}\n")
        assert cli(tmp_path, "sync").returncode == 0
    shutil.copyfile(backup, manifest)  # the restore: revision 1 again
    note.write_text("current words quokka\n")
    stale = cli(tmp_path, "sync", "--json")  # revision 2 < 3: refused as stale
    assert stale.returncode == 0, stale.stderr
    documents = json.loads(stale.stdout)["index"]["documents"]
    assert documents["replaced"] == 0 and documents["failed"] > 0, documents  # not both
    with Workspace.open(config) as ws:
        assert not finds(ws, "quokka", "lite") and finds(ws, "number1", "lite")
        ws.reconcile(repair=True)
        assert all(s["in_sync"] for s in ws.reconcile()["sinks"].values())
        for name in ("lite", "vectors"):
            assert finds(ws, "quokka", name) and not finds(ws, "number1", name), name
        note.write_text("later words wombat\n")
        assert ws.sync().index.failed == 0 and ws.failures() == []
        for name in ("lite", "vectors"):
            assert finds(ws, "wombat", name), name
