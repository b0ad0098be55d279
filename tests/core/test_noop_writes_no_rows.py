"""A no-op proves presence without writing a document row, and deletes still arrive.

A complete read used to set every listed row's ``last_seen_run``: a no-op of N objects
was N row updates (on PostgreSQL N new tuple versions and index entries, and N dead ones).
Now each batch stores the ids it listed unchanged as one row of ``seen_batches``, and the
prune collects what neither that list nor ``last_seen_run`` names (invariant 9). These
tests hold both halves: the no-op writes nothing to ``documents``; what vanished is
deleted, exactly, also when the run that saw the rest was killed halfway and resumed by
another process, which must trust the lists the dead process committed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import event, func, insert, select

from headwater import Workspace
from headwater.clock import utcnow
from headwater.failpoints import AFTER_MANIFEST_COMMIT
from headwater.manifest import schema as t
from headwater.manifest.db import begin_write
from headwater.manifest.records import RunCounts
from headwater.manifest.runs import FAILED
from headwater.manifest.schedule import ScheduleStore
from headwater.manifest.store import Manifest
from workspace_helpers import filesystem_source, write_config

FILES = 40


def make_tree(root: Path, count: int = FILES) -> None:
    root.mkdir(parents=True)
    for n in range(count):
        (root / f"note-{n:03}.md").write_text(f"# Note {n}\n\nAbout subject {n}.\n")


def active_object_ids(ws: Workspace) -> set[str]:
    docs = t.documents.c
    with ws.manifest.engine.connect() as conn:
        rows = conn.execute(select(docs.object_id).where(docs.state == "active"))
        return {r[0] for r in rows}


def run_lists_left(ws: Workspace) -> int:
    with ws.manifest.engine.connect() as conn:
        return sum(
            int(conn.execute(select(func.count()).select_from(table)).scalar_one())
            for table in (t.seen_batches, t.unseen_documents, t.enumerations)
        )


def test_a_no_op_writes_no_document_row_and_a_delete_still_arrives(
    tmp_path: Path, manifest_url: str
) -> None:
    root = tmp_path / "files"
    make_tree(root)
    config = write_config(
        tmp_path, manifest_url=manifest_url, sources=filesystem_source(root, extra="batch_size = 7")
    )
    with Workspace.open(config) as ws:
        assert ws.sync(index=False).runs[0].counts.new == FILES
        statements: list[str] = []

        def remember(_conn: Any, _cursor: Any, sql: str, *_args: Any) -> None:
            statements.append(" ".join(sql.split()).lower())

        event.listen(ws.manifest.engine, "before_cursor_execute", remember)
        try:
            noop = ws.sync(index=False).runs[0]
        finally:
            event.remove(ws.manifest.engine, "before_cursor_execute", remember)
        assert (noop.counts.unchanged, noop.counts.deleted) == (FILES, 0)
        writes = [
            s for s in statements if s.startswith(("update documents", "insert into documents"))
        ]
        assert writes == [], writes
        assert any(s.startswith("insert into seen_batches") for s in statements)
        assert run_lists_left(ws) == 0  # a finished run leaves no list behind

        (root / "note-003.md").unlink()
        (root / "note-031.md").unlink()
        (root / "note-010.md").write_text("# Note 10\n\nEdited.\n")
        after = ws.sync(index=False).runs[0]
        assert (after.counts.changed, after.counts.deleted) == (1, 2)
        assert active_object_ids(ws) == {p.name for p in root.iterdir()}
        assert run_lists_left(ws) == 0


def sync_process(
    config: Path, failpoint: str | None = None, *extra: str
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("HEADWATER_FAILPOINTS", None)
    if failpoint:
        env["HEADWATER_FAILPOINTS"] = failpoint
    command = ["sync", "--no-index", "--json", *extra]
    return subprocess.run(
        [sys.executable, "-m", "headwater.cli", "-c", str(config), *command],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_resumed_run_trusts_what_the_killed_process_saw(
    tmp_path: Path, manifest_url: str
) -> None:
    """The first process lists a batch of unchanged files, commits it and is SIGKILLed;
    the second resumes from the checkpoint, so it never lists those files itself. Its
    prune must delete only the two files really gone, not the ones the dead process saw."""
    root = tmp_path / "files"
    make_tree(root)
    config = write_config(
        tmp_path, manifest_url=manifest_url, sources=filesystem_source(root, extra="batch_size = 1")
    )
    assert sync_process(config).returncode == 0
    (root / "note-038.md").unlink()
    (root / "note-039.md").unlink()
    killed = sync_process(config, AFTER_MANIFEST_COMMIT)
    assert killed.returncode == -9, killed.stderr
    with Workspace.open(config) as ws, ws.manifest.engine.connect() as conn:
        seen_lists = conn.execute(select(func.count()).select_from(t.seen_batches))
        assert seen_lists.scalar_one() >= 1  # the dead process's batch is committed
    resumed = sync_process(config)
    assert resumed.returncode == 0, resumed.stderr
    (run,) = json.loads(resumed.stdout)["runs"]
    assert run["resumed"] is True
    assert run["counts"]["deleted"] == 2
    with Workspace.open(config) as ws:
        assert active_object_ids(ws) == {p.name for p in root.iterdir()}
        assert run_lists_left(ws) == 0


def test_lists_a_finished_run_left_behind_are_purged_with_it(manifest_url: str) -> None:
    """A process that died between finishing a run and clearing its lists left them: the
    housekeeping purge of old runs removes them with the run, never a running run's."""
    manifest = Manifest.open(manifest_url)
    try:
        manifest.ensure_source("docs", "filesystem")
        finished = manifest.runs.start("docs", None, utcnow())
        manifest.runs.finish(finished, FAILED, RunCounts(), 0.1)
        running = manifest.runs.start("docs", None, utcnow())
        with begin_write(manifest.engine) as conn:
            for run_id in (finished, running):
                conn.execute(insert(t.seen_batches), {"run_id": run_id, "object_ids": '["d"]'})
                conn.execute(insert(t.unseen_documents), {"run_id": run_id, "document_id": "d"})
        ScheduleStore(manifest.engine).purge_runs(utcnow() + timedelta(days=1))
        with manifest.engine.connect() as conn:
            for table in (t.seen_batches, t.unseen_documents):
                left = conn.execute(select(table.c.run_id)).scalars().all()
                assert left == [running], table.name
    finally:
        manifest.engine.dispose()


def test_a_full_sync_superseding_a_killed_run_clears_its_lists(tmp_path: Path) -> None:
    """`sync --full` cancels the interrupted run instead of resuming it: the lists that
    run committed can never be used again and go with it."""
    root = tmp_path / "files"
    make_tree(root, 10)
    url = f"sqlite:///{tmp_path / 'state' / 'manifest.db'}"
    config = write_config(
        tmp_path, manifest_url=url, sources=filesystem_source(root, extra="batch_size = 1")
    )
    assert sync_process(config).returncode == 0
    assert sync_process(config, AFTER_MANIFEST_COMMIT).returncode == -9
    full = sync_process(config, None, "--full")
    assert full.returncode == 0, full.stderr
    with Workspace.open(config) as ws:
        assert run_lists_left(ws) == 0
        assert len(active_object_ids(ws)) == 10
