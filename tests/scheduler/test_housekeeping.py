"""Housekeeping's content-store garbage: unreferenced, old objects go; nothing else does.

A filesystem source is synced, then one file changes (its old content becomes garbage)
and one disappears (a deleted document needs no content): after the walk the store holds
exactly the active documents' content plus an orphan younger than an hour, and every
active document can still be re-indexed from it. On SQLite and PostgreSQL manifests.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

import pytest
from sched_helpers import cli, sources_config, write_files
from sqlalchemy import delete

from headwater import Workspace
from headwater.manifest import schema as t
from headwater.manifest.garbage import collect_garbage
from headwater.manifest.records import ACTIVE
from headwater.scheduler.daemon import Scheduler
from headwater.scheduler.housekeeping import housekeep

TWO_HOURS = 2 * 3600


def stored(ws: Workspace) -> set[str]:
    return {p.name[: -len(".zst")] for p in ws.content_store.root.glob("*/*.zst")}


def active_checksums(ws: Workspace) -> set[str]:
    records = ws.manifest.documents_after("", 10_000)
    return {r.checksum for r in records if r.state == ACTIVE and r.checksum is not None}


def age_everything(root: Path, seconds: float = TWO_HOURS) -> None:
    then = time.time() - seconds
    for path in root.rglob("*"):
        if path.is_file():
            os.utime(path, (then, then))


def synced_then_changed(tmp_path: Path, manifest_url: str | None) -> Path:
    root = write_files(tmp_path / "corpus", 4)
    config = sources_config(tmp_path, manifest_url, {"docs": root}, source_extra="")
    with Workspace.open(config) as ws:
        ws.sync()
    (root / "doc00000.txt").write_text("a new version of document zero\n")
    (root / "doc00001.txt").unlink()
    with Workspace.open(config) as ws:
        ws.sync()
    return config


def test_unreferenced_old_content_is_removed_and_the_rest_kept(
    tmp_path: Path, manifest_url: str
) -> None:
    config = synced_then_changed(tmp_path, manifest_url)
    with Workspace.open(config) as ws:
        active = active_checksums(ws)
        assert len(active) == 3 and len(stored(ws)) == 5  # + old doc0, + deleted doc1
        age_everything(ws.content_store.root)
        young = "f" * 64  # a commit in flight: stored, not yet in the manifest
        ws.content_store.put(young, "content of a commit in flight")
        stale_tmp = ws.content_store.root / "ab" / ".tmp-crashed"
        stale_tmp.parent.mkdir(exist_ok=True)
        stale_tmp.write_bytes(b"half a write")
        age_everything(stale_tmp.parent)
        unknown = ws.content_store.root / "ab" / "notes.txt"  # not ours: never touched
        unknown.write_text("operator's notes")
        age_everything(unknown.parent)

        dry = collect_garbage(ws.manifest.engine, ws.content_store, dry_run=True)
        assert (dry.removed, dry.kept_young, dry.dry_run) == (3, 1, True)
        assert len(stored(ws)) == 6  # a dry run deletes nothing

        report = housekeep(ws.runtime)
        assert report.content.scanned == 6
        assert (report.content.removed, report.content.kept_young) == (3, 1)
        assert report.content.removed_bytes > len(b"half a write")
        assert stored(ws) == active | {young}
        assert not stale_tmp.exists() and unknown.exists()
        for checksum in active:  # what every reader needs is still there
            assert ws.content_store.get(checksum)

        # Every index can still be re-applied from the store alone.
        with ws.manifest.engine.begin() as conn:
            conn.execute(delete(t.document_indexes))
        again = ws.index()
        assert again.replaced == 3 and not again.failed, again.as_dict()


def test_storing_existing_content_again_makes_it_young(tmp_path: Path) -> None:
    """A put of content that already exists (a commit about to point at it again)
    refreshes its age, so the walk keeps it even while no document refers to it."""
    config = synced_then_changed(tmp_path, None)
    with Workspace.open(config) as ws:
        age_everything(ws.content_store.root)
        garbage = stored(ws) - active_checksums(ws)
        assert len(garbage) == 2
        again = sorted(garbage)[0]
        ws.content_store.put(again, "ignored: the object exists")
        report = collect_garbage(ws.manifest.engine, ws.content_store)
        assert (report.removed, report.kept_young) == (1, 1)
        assert again in stored(ws)


def test_the_command_and_the_scheduler_log_report_the_removal(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = synced_then_changed(tmp_path, None)
    age_everything(tmp_path / "state" / "content")
    done = cli(config, "housekeeping", "--json")
    assert done.returncode == 0, done.stderr
    content = json.loads(done.stdout)["content"]
    assert (content["scanned"], content["removed"]) == (5, 2)
    assert content["removed_bytes"] > 0

    (tmp_path / "corpus" / "doc00002.txt").write_text("document two, rewritten\n")
    with Workspace.open(config) as ws:
        ws.sync()
    age_everything(tmp_path / "state" / "content")
    caplog.set_level(logging.INFO, logger="headwater.scheduler")
    assert Scheduler(config, once=True).serve() == 0
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("housekeeping")]
    assert len(lines) == 1
    assert "content store: 1 unreferenced objects" in lines[0], lines


def test_an_indexer_holding_a_superseded_record_skips_it_and_the_next_drain_indexes_it(
    tmp_path: Path, manifest_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The race housekeeping opens: an indexer read a document's record, a sync then
    # committed a new revision, and the old content (older than an hour) was collected
    # before the indexer read it. The drain must not stop; the new revision is indexed.
    root = write_files(tmp_path / "corpus", 2)
    config = sources_config(tmp_path, manifest_url, {"docs": root}, source_extra="")
    with Workspace.open(config) as ws:
        ws.sync(index=False)
        (stale,) = [r for r in ws.manifest.documents_after("", 10) if "doc00000" in r.object_id]
        (root / "doc00000.txt").write_text("zebra crossings are painted white\n")
        ws.sync(index=False)
        assert stale.checksum is not None
        ws.content_store.path(stale.checksum).unlink()  # collected as garbage
        real = ws.manifest.index_state.pending
        served: list[bool] = []

        def pending_with_the_stale_record(*args: object, **kwargs: object) -> object:
            batch = real(*args, **kwargs)  # type: ignore[arg-type]
            if not served:
                served.append(True)
                for pw in batch:
                    if pw.document.document_id == stale.document_id:
                        object.__setattr__(pw, "document", stale)
            return batch

        monkeypatch.setattr(ws.manifest.index_state, "pending", pending_with_the_stale_record)
        first = ws.index()
        assert first.failed == 0, first
        monkeypatch.setattr(ws.manifest.index_state, "pending", real)
        ws.index()
        hits = ws.search("zebra crossings", mode="keyword")
        assert [h["document_id"] for h in hits] == [stale.document_id]
        assert ws.dead_letters() == []
