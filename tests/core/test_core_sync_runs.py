"""Sync hardening through the Workspace API, on SQLite and PostgreSQL manifests.

``sync(full=True)`` re-reads from the beginning; inferred deletes (404/410) stay within
the safety fraction; prune candidates are counted and streamed in keyset pages.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import replace
from pathlib import Path

from headwater import Workspace
from headwater.connectors.base import ReadStream
from headwater.sync.runner import SyncOptions, SyncRunner
from headwater.types import Checkpoint, Deleted, KnownVersions, Window
from memory_connector import SOURCES, Item, MemoryConnector, MemorySource
from workspace_helpers import write_config

SEEN: list[tuple[Checkpoint | None, Window, str | None]] = []


class InferringConnector(MemoryConnector):
    """The memory connector, but every explicit delete is only inferred (like a 404)."""

    def read(
        self, window: Window, checkpoint: Checkpoint | None, known: KnownVersions
    ) -> ReadStream:
        for item in super().read(window, checkpoint, known):
            yield replace(item, inferred=True) if isinstance(item, Deleted) else item
        return None


class CursorConnector(MemoryConnector):
    """Returns a final cursor past every object: a normal next run reads nothing."""

    def read(
        self, window: Window, checkpoint: Checkpoint | None, known: KnownVersions
    ) -> ReadStream:
        SEEN.append((checkpoint, window, known("id-0000")))
        yield from super().read(window, checkpoint, known)
        return Checkpoint(json.dumps({"after": max(self.source.items)}))


def memory_ws(
    tmp_path: Path, manifest_url: str, items: int, type_name: str = "memory"
) -> tuple[Workspace, MemorySource]:
    name = uuid.uuid4().hex
    source = SOURCES[name] = MemorySource(
        items={f"id-{n:04d}": Item(f"p{n}", f"text number {n}") for n in range(items)}
    )
    body = (
        f'[[source]]\nid = "mem"\ntype = "{type_name}"\nname = "{name}"\n'
        "batch_size = 200\naccess = { public = true }\n"
    )
    config = write_config(tmp_path, manifest_url=manifest_url, sources=body)
    types = {"memory": MemoryConnector, "inferring": InferringConnector, "cursor": CursorConnector}
    return Workspace.open(config, connector_types=types), source


def test_inferred_deletes_stop_at_the_safety_fraction(tmp_path: Path, manifest_url: str) -> None:
    ws, source = memory_ws(tmp_path, manifest_url, 10, "inferring")
    with ws:
        ws.sync(index=False)
        source.explicit_deletes = [(object_id, None) for object_id in source.items]
        run = ws.sync(index=False).runs[0]
        # 20% of 10 active documents: two inferred deletes applied, the rest kept active.
        assert ws.manifest.count_documents("mem") == 8
        assert run.counts.deleted == 2
        assert run.status == "completed_with_errors"
        assert run.prune_blocked is not None and run.prune_blocked["candidates"] == 10
        assert run.as_dict()["prune_blocked"]["deleted"] == 2
        source.items.clear()  # now the source really lost them all
        forced = ws.sync(index=False, force=True).runs[0]
        assert forced.status == "succeeded" and forced.counts.deleted == 8
        assert ws.manifest.count_documents("mem") == 0


def test_explicit_deletes_are_not_limited(tmp_path: Path, manifest_url: str) -> None:
    ws, source = memory_ws(tmp_path, manifest_url, 10)
    with ws:
        ws.sync(index=False)
        source.explicit_deletes = [(object_id, None) for object_id in source.items]
        run = ws.sync(index=False).runs[0]
        assert run.counts.deleted == 10 and run.status == "succeeded"


def test_full_sync_ignores_cursor_and_window_and_skips_by_checksum(
    tmp_path: Path, manifest_url: str
) -> None:
    ws, source = memory_ws(tmp_path, manifest_url, 5, "cursor")
    SEEN.clear()
    with ws:
        first = ws.sync(index=False).runs[0]
        normal = ws.sync(index=False).runs[0]
        assert normal.counts.seen == 0, "the cursor of the first run skips everything"
        assert SEEN[-1][0] is not None and SEEN[-1][1].start is not None
        assert SEEN[-1][2], "a plain run tells the connector the stored version hint"
        source.items["id-0001"].text = "changed text"
        full = ws.sync(index=False, full=True).runs[0]
        checkpoint, window, hint = SEEN[-1]
        assert checkpoint is None and window.start is None
        assert hint == "", "known but no hint: no conditional request, no 304"
        assert full.window_start is None and full.window_end is not None
        assert full.counts.seen == 5
        assert (full.counts.unchanged, full.counts.changed) == (4, 1)
        assert full.status == "succeeded" and first.status == "succeeded"
        # The full run leaves its own cursor for the next normal run.
        assert ws.sync(index=False).runs[0].counts.seen == 0


def test_prune_streams_candidates_in_pages_of_500(tmp_path: Path, manifest_url: str) -> None:
    ws, source = memory_ws(tmp_path, manifest_url, 1100)
    with ws:
        ws.sync(index=False)
        source.items.clear()
        dry = ws.prune(dry_run=True, force=True)[0]
        assert dry["status"] == "dry_run" and dry["candidates"] == 1100
        assert len(dry["would_delete"]) == 1000
        blocked = ws.prune(dry_run=True)[0]
        assert blocked["status"] == "blocked" and len(blocked["would_delete"]) == 1000
        section = ws.source_section("mem")
        runner = SyncRunner(
            ws.manifest,
            ws.content_store,
            ws.sources.identity(section),
            ws.sources.settings(section),
            ws.sources.connector("mem"),
        )
        deleted_at_each_commit: list[int] = []
        report = runner.run(
            SyncOptions(
                prune=True,
                force_prune=True,
                on_batch=lambda: deleted_at_each_commit.append(
                    ws.manifest.count_documents("mem", "deleted")
                ),
            )
        )
        assert report.prune is not None and report.prune["deleted"] == 1100
        assert deleted_at_each_commit == [500, 1000, 1100]


def test_prune_candidate_pages_cover_every_candidate_once(
    tmp_path: Path, manifest_url: str
) -> None:
    ws, _ = memory_ws(tmp_path, manifest_url, 30)
    with ws:
        ws.sync(index=False)
        run_id = str(uuid.uuid4())  # a run that saw nothing: every document is a candidate
        m = ws.manifest
        assert m.collect_unseen("mem", run_id) == 30
        assert m.count_prune_candidates("mem", run_id, by_enumeration=False) == 30
        pages = list(m.iter_prune_candidates("mem", run_id, by_enumeration=False, page=7))
        assert [len(p) for p in pages] == [7, 7, 7, 7, 2]
        ids = [r.document_id for p in pages for r in p]
        assert ids == sorted(ids) and len(set(ids)) == 30


def test_full_sync_reads_dead_lettered_objects_again(tmp_path: Path, manifest_url: str) -> None:
    """A dead entry at an unchanged version hint is skipped by a plain sync, but `--full`
    trusts no hint: the object is read again (e.g. its permissions were fixed, which
    keeps its mtime and size) and indexed when it now parses."""
    root = tmp_path / "files"
    root.mkdir()
    path = root / "note.txt"
    path.write_bytes(b"broken \x00 text.")
    stat = path.stat()
    sources = (
        f'[[source]]\nid = "fs"\ntype = "filesystem"\nroot = "{root}"\n'
        "access = { public = true }\n"
    )
    config = write_config(tmp_path, manifest_url=manifest_url, sources=sources)
    with Workspace.open(config) as ws:
        assert ws.sync(index=False).runs[0].counts.failed == 1
        [dead] = ws.dead_letters("fs")
        assert dead.error_class == "unsupported_type"
        path.write_bytes(b"mended - text.")  # same size
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same mtime
        plain = ws.sync(index=False).runs[0]
        assert (plain.counts.failed, plain.fetched) == (1, 0), "a plain sync trusts the hint"
        full = ws.sync(index=False, full=True).runs[0]
        assert (full.counts.new, full.counts.failed, full.fetched) == (1, 0, 1)
        assert full.status == "succeeded" and ws.dead_letters("fs") == []
        assert ws.document(source="fs", object_id="note.txt")["state"] == "active"
