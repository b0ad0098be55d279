"""A source removed from the config: never searched, listed by status, removed on demand.

On SQLite and PostgreSQL manifests, through the Workspace API and the CLI.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from headwater import RemovalReport, Workspace
from headwater.errors import ConfigError, NotFoundError
from workspace_helpers import filesystem_source, write_config

HEADWATER = [sys.executable, "-m", "headwater.cli"]


def configure(tmp_path: Path, manifest_url: str | None, corpus: Path, *ids: str) -> Path:
    sources = "".join(filesystem_source(corpus, source_id=i) for i in ids)
    return write_config(tmp_path, manifest_url=manifest_url, sources=sources)


def test_a_removed_source_is_not_searchable_and_source_remove_deletes_it(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    config = configure(tmp_path, manifest_url, corpus, "docs", "old")
    with Workspace.open(config) as ws:
        ws.sync()
        hits = ws.search("vacation", groups=["staff"], mode="keyword", k=20)
        assert {h["source"] for h in hits} == {"docs", "old"}
        old_ids = [h["document_id"] for h in hits if h["source"] == "old"]
    configure(tmp_path, manifest_url, corpus, "docs")  # "old" taken out of the config
    with Workspace.open(config) as ws:
        for mode in ("keyword", "vector", "hybrid"):
            hits = ws.search("vacation", groups=["staff"], mode=mode, k=20)
            assert hits and {h["source"] for h in hits} == {"docs"}, mode
        with pytest.raises(ConfigError, match="source remove"):
            ws.search("vacation", groups=["staff"], sources=["old"])
        with pytest.raises(ConfigError, match="source remove"):
            ws.prune(["old"])
        by_id = {s["id"]: s for s in ws.status()["sources"]}
        assert by_id["docs"]["configured"] is True
        assert by_id["old"]["configured"] is False and by_id["old"]["documents"] == 5

        plan = ws.remove_source("old", dry_run=True)
        assert plan["documents"] == 5 and plan["runs"] == 1 and plan["configured"] is False
        assert isinstance(plan, RemovalReport) and (plan.documents, plan.runs) == (5, 1)
        assert list(plan.as_dict()) == [  # the JSON `source remove --dry-run` prints
            "source", "configured", "dry_run", "documents", "runs", "checkpoints", "failures"
        ]  # fmt: skip
        assert ws.manifest.count_documents("old") == 5, "a dry run changes nothing"

        report = ws.remove_source("old")
        assert report["tombstoned"] == 5 and report["unverified_deletes"] == 0
        assert report == {  # the JSON `source remove --json` prints, unchanged
            "source": "old",
            "configured": False,
            "dry_run": False,
            "documents": 5,
            "runs": 1,
            "checkpoints": plan.checkpoints,
            "failures": 0,
            "tombstoned": 5,
            "deleted_from_indexes": 5,
            "unverified_deletes": 0,
        }
        assert report["deleted_from_indexes"] == 5
        sink = ws.sink("main")
        assert old_ids and all(sink.count(d) == 0 for d in old_ids)
        assert ws.manifest.count_documents("old") == 0
        tomb = ws.document(old_ids[0])
        assert tomb["state"] == "deleted"
        assert ws.manifest.runs.latest("old") is None
        assert ws.manifest.runs.next_cursor("old") is None
        assert "old" not in {s["id"] for s in ws.status()["sources"]}
        assert ws.manifest.count_documents("docs") == 5, "other sources are untouched"
        with pytest.raises(NotFoundError):
            ws.remove_source("old")


def test_removing_a_configured_source_starts_it_over(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    config = configure(tmp_path, manifest_url, corpus, "docs")
    with Workspace.open(config) as ws:
        ws.sync()
        report = ws.remove_source("docs")
        assert report["configured"] is True and report["tombstoned"] == 5
        assert ws.search("vacation", groups=["staff"], mode="keyword") == []
        again = ws.sync().runs[0]
        assert again.counts.new == 5 and again.window_start is None


def test_cli_source_remove(tmp_path: Path, corpus: Path) -> None:
    config = configure(tmp_path, None, corpus, "docs", "old")
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*HEADWATER, "-c", str(config), *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )

    assert cli("sync").returncode == 0
    configure(tmp_path, None, corpus, "docs")
    status = json.loads(cli("status", "--json").stdout)
    assert [(s["id"], s["configured"]) for s in status["sources"]] == [
        ("docs", True),
        ("old", False),
    ]
    dry = cli("source", "remove", "old", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout)["documents"] == 5
    done = cli("source", "remove", "old")
    assert done.returncode == 0, done.stderr
    assert "5 documents deleted" in done.stdout
    missing = cli("source", "remove", "old")
    assert missing.returncode == 2 and "neither configured" in missing.stderr


def test_cli_sync_full_rereads_everything_and_skips_by_checksum(
    tmp_path: Path, corpus: Path
) -> None:
    config = configure(tmp_path, None, corpus, "docs")

    def sync(*args: str) -> dict[str, object]:
        done = subprocess.run(
            [*HEADWATER, "-c", str(config), "sync", "--json", "--no-index", *args],
            capture_output=True,
            text=True,
            env={**os.environ, "HF_HUB_OFFLINE": "1"},
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        (run,) = json.loads(done.stdout)["runs"]
        assert isinstance(run, dict)
        return run

    sync()
    assert sync()["fetched"] == 0, "a plain re-sync reads nothing"
    full = sync("--full")
    assert full["window"] == {"start": None, "end": full["window"]["end"]}  # type: ignore[index]
    assert full["fetched"] == 5
    assert full["counts"] == {  # every file read again, nothing changed by checksum
        "seen": 5, "new": 0, "changed": 0, "unchanged": 5, "deleted": 0, "failed": 0, "stale": 0
    }  # fmt: skip
