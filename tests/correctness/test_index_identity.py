"""An index bound to another manifest is refused, never emptied on its own (CLI, real
processes; the index's own manifest on SQLite and PostgreSQL).

A wrong ``[manifest] url`` makes ``sync`` and ``search`` fail with one error naming both
manifest ids and the two commands that give the index to this manifest; the index keeps
every chunk and its binding, so fixing the url brings searches back at once. ``reconcile
--adopt`` takes the index over keeping what it holds (and rewrites what differs);
``reconcile --reset`` empties it and indexes everything from this manifest.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from headwater import Workspace
from headwater.errors import IndexOwnedElsewhere
from workspace_helpers import filesystem_source, write_config


def configure(tmp_path: Path, manifest_url: str, corpus: Path) -> Path:
    return write_config(tmp_path, manifest_url=manifest_url, sources=filesystem_source(corpus))


def cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("HEADWATER_FAILPOINTS", None)
    return subprocess.run(
        [sys.executable, "-m", "headwater.cli", *args],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def ok(tmp_path: Path, *args: str) -> Any:
    done = cli(tmp_path, *args)
    assert done.returncode == 0, done.stderr + done.stdout
    return json.loads(done.stdout) if "--json" in args else done.stdout


def titles(tmp_path: Path, query: str) -> list[str]:
    found = ok(tmp_path, "search", query, "--group", "staff", "--mode", "keyword", "--json")
    return [h["title"] for h in found["results"]]


def index_rows(tmp_path: Path) -> tuple[int, str]:
    """(chunks, bound manifest id) of the sqlite index file, read without Headwater."""
    with closing(sqlite3.connect(tmp_path / "state" / "index-main.db")) as db:
        chunks = db.execute("SELECT count(*) FROM chunks").fetchone()[0]
        bound = db.execute("SELECT value FROM meta WHERE key = 'manifest_id'").fetchone()[0]
    return int(chunks), str(bound)


def manifest_id(config: Path) -> str:
    with Workspace.open(config) as ws:
        return ws.manifest.manifest_id


def test_a_wrong_manifest_url_is_refused_and_leaves_the_index_intact(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    config = configure(tmp_path, manifest_url, corpus)
    ok(tmp_path, "sync")
    before = index_rows(tmp_path)
    assert before[0] > 0 and before[1] == manifest_id(config)
    wrong = configure(tmp_path, f"sqlite:///{tmp_path / 'typo' / 'manifest.db'}", corpus)
    (tmp_path / "typo").mkdir()
    other = manifest_id(wrong)
    for args in (("sync",), ("search", "vacation", "--group", "staff"), ("reconcile",)):
        done = cli(tmp_path, *args)
        assert done.returncode == 2, (args, done.stderr, done.stdout)
        message = " ".join(done.stderr.split())
        assert f"index 'main@1' belongs to manifest {before[1]}" in message, message
        assert f"not to this workspace's manifest {other}" in message, message
        assert "fix [manifest] url" in message, message
        assert "`headwater reconcile --adopt --sink main`" in message, message
        assert "`headwater reconcile --reset --sink main`" in message, message
        assert index_rows(tmp_path) == before, args  # nothing emptied, nothing rebound
    ok(tmp_path, "status")  # reads the manifest only
    assert index_rows(tmp_path) == before
    configure(tmp_path, manifest_url, corpus)  # the url fixed: searches work at once
    assert "Vacation policy" in titles(tmp_path, "vacation")
    assert index_rows(tmp_path) == before
    ok(tmp_path, "sync")
    assert "Vacation policy" in titles(tmp_path, "vacation")


def test_reconcile_adopt_takes_the_index_over_and_reset_rebuilds_it(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    configure(tmp_path, manifest_url, corpus)
    ok(tmp_path, "sync")
    chunks = index_rows(tmp_path)[0]
    (corpus / "guides" / "expenses.md").unlink()  # the new manifest never knows it
    adopted = configure(tmp_path, f"sqlite:///{tmp_path / 'moved.db'}", corpus)
    ok(tmp_path, "sync", "--no-index")  # the manifest learns the sources; no index touched
    report = ok(tmp_path, "reconcile", "--adopt", "--json")
    assert report["taken_over"] == ["main@1"], report
    assert index_rows(tmp_path)[1] == manifest_id(adopted)
    assert "Vacation policy" in titles(tmp_path, "vacation")
    assert titles(tmp_path, "reimbursement") == []  # what this manifest lacks is removed
    assert all(s["in_sync"] for s in ok(tmp_path, "reconcile", "--json")["sinks"].values())
    reset = configure(tmp_path, f"sqlite:///{tmp_path / 'third.db'}", corpus)
    ok(tmp_path, "sync", "--no-index")
    report = ok(tmp_path, "reconcile", "--reset", "--json")
    assert report["taken_over"] == ["main@1"] and report["index"]["documents"]["replaced"] == 4
    assert index_rows(tmp_path)[1] == manifest_id(reset) and index_rows(tmp_path)[0] < chunks
    assert "Vacation policy" in titles(tmp_path, "vacation")
    assert all(s["in_sync"] for s in ok(tmp_path, "reconcile", "--json")["sinks"].values())
    again = ok(tmp_path, "reconcile", "--adopt", "--json")  # nothing left to take over
    assert again["taken_over"] == []


def synced_then_misconfigured(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> tuple[tuple[int, str], Path]:
    """Sync in-process, then point the config at another manifest: (index rows, config)."""
    with Workspace.open(configure(tmp_path, manifest_url, corpus)) as ws:
        ws.sync()
    return index_rows(tmp_path), configure(tmp_path, f"sqlite:///{tmp_path / 'other.db'}", corpus)


def test_an_index_bound_to_another_manifest_is_refused_on_open_and_left_intact(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    # In-process twin of the CLI test above (the cheap killer of its mutant).
    before, wrong = synced_then_misconfigured(tmp_path, manifest_url, corpus)
    with Workspace.open(wrong) as ws, pytest.raises(IndexOwnedElsewhere, match="belongs to"):
        ws.indexes.sink("main")
    assert index_rows(tmp_path) == before  # nothing emptied, nothing rebound


def test_storage_of_an_index_bound_to_another_manifest_is_never_dropped(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    before, wrong = synced_then_misconfigured(tmp_path, manifest_url, corpus)
    with Workspace.open(wrong) as ws:
        live = ws.manifest.generations.get("main", 1)
        with pytest.raises(IndexOwnedElsewhere, match="belongs to manifest"):
            ws.indexes.drop_generation_sink(live)  # what retire or cancel would do
    assert index_rows(tmp_path) == before
