"""Reconcile, DLQ attempts, the between-sinks failpoint, and the prune/dlq CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from headwater import Workspace
from headwater.indexer.reconcile import reconcile
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
        clean = reconcile(ws)
        assert all(s["in_sync"] for s in clean["sinks"].values())
        assert clean["sinks"]["lite"]["checked"] == 5
        orphan = IndexDocument("f" * 64, "docs", "ghost", "ghost://", Access(public=True))
        chunk = Chunk(
            "00000000-0000-0000-0000-000000000001", "f" * 64, 0, "ghost text", "ghost text"
        )
        ws.sink("vectors").replace(orphan, [EmbeddedChunk(chunk, [0.25] * 16)], 1)
    (tmp_path / "state" / "index-lite.db").unlink()  # the embedded index is lost
    with Workspace.open(config) as ws:
        found = reconcile(ws)
        assert found["sinks"]["lite"]["missing"] == 5 and not found["sinks"]["lite"]["in_sync"]
        assert found["sinks"]["vectors"]["orphans"] == 1
        repaired = reconcile(ws, repair=True)
        assert repaired["sinks"]["lite"]["repaired"] == 5
        assert repaired["sinks"]["vectors"]["repaired"] == 1
        after = reconcile(ws)
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
    assert json.loads(cli(tmp_path, "status", "--json").stdout)["sources"][0]["documents"] == 5
    done = json.loads(cli(tmp_path, "prune", "--json").stdout)["prunes"][0]
    assert done["deleted"] == 1
    assert json.loads(cli(tmp_path, "status", "--json").stdout)["sources"][0]["documents"] == 4
    dropped = cli(tmp_path, "dlq", "drop", str(entries[0]["id"]))
    assert dropped.returncode == 0 and "dropped 1" in dropped.stdout
    assert cli(tmp_path, "dlq", "show", str(entries[0]["id"])).returncode == 2
    assert cli(tmp_path, "dlq", "redrive").returncode == 2
