"""Errors that name what happened and the fix, and output that is safe on a terminal."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from headwater import Workspace
from workspace_helpers import filesystem_source, write_config

HEADWATER = [sys.executable, "-m", "headwater.cli"]
QDRANT_DOWN = '[[index]]\nname = "main"\ntype = "qdrant"\nurl = "http://127.0.0.1:1"\n'


def cli(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*HEADWATER, "-c", str(config), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "400"},
        timeout=300,
    )


def damage_the_documents_table(path: Path) -> None:
    """Overwrite the root page of the manifest's documents table; the schema and the
    other tables (runs) stay readable, so the manifest opens and fails on a later read."""
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        (root,) = conn.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = 'documents'"
        ).fetchone()
    conn.close()
    with path.open("r+b") as handle:
        handle.seek((root - 1) * page_size)
        handle.write(bytes(range(256)) * (page_size // 256))


def test_a_damaged_manifest_says_what_happened_and_what_to_do(tmp_path: Path, corpus: Path) -> None:
    config = write_config(tmp_path, manifest_url=None, sources=filesystem_source(corpus))
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "manifest.db").write_bytes(b"\x8f garbage, not SQLite \x00" * 400)
    done = cli(config, "status")
    assert done.returncode == 1
    message = " ".join(done.stderr.split())
    assert "bug in Headwater" not in message
    assert "damaged" in message and "backup" in message
    assert "headwater reconcile --adopt" in message


def test_a_manifest_damaged_inside_a_table_is_not_called_a_bug(
    tmp_path: Path, corpus: Path
) -> None:
    config = write_config(tmp_path, manifest_url=None, sources=filesystem_source(corpus))
    assert cli(config, "sync", "--no-index").returncode == 0
    path = tmp_path / "state" / "manifest.db"
    damage_the_documents_table(path)
    done = cli(config, "reconcile")  # reads the documents table (status no longer does)
    assert done.returncode == 1
    message = " ".join(done.stderr.split())
    assert "bug in Headwater" not in message
    assert "malformed" in message and "headwater reconcile --adopt" in message


def test_a_sync_that_meets_a_damaged_table_records_the_damage_and_the_fix(
    tmp_path: Path, corpus: Path
) -> None:
    config = write_config(tmp_path, manifest_url=None, sources=filesystem_source(corpus))
    assert cli(config, "sync", "--no-index").returncode == 0
    path = tmp_path / "state" / "manifest.db"
    damage_the_documents_table(path)
    done = cli(config, "sync", "--no-index", "--json")
    assert done.returncode == 1
    (run,) = json.loads(done.stdout)["runs"]
    with sqlite3.connect(path) as conn:  # what the failed run recorded
        (recorded,) = conn.execute(
            "SELECT error FROM runs WHERE status = 'failed' ORDER BY started_at DESC"
        ).fetchone()
    conn.close()
    assert run["status"] == "failed" and run["error"] == recorded
    assert recorded.startswith("ManifestDamaged: the manifest ")
    assert "malformed" in recorded and "headwater reconcile --adopt" in recorded
    assert "[SQL:" not in recorded and "[parameters:" not in recorded  # no statement, no ids


def test_an_unopenable_sqlite_manifest_hint_is_about_the_file_not_a_server(
    tmp_path: Path, corpus: Path
) -> None:
    target = tmp_path / "not-a-file"
    target.mkdir()
    config = write_config(
        tmp_path, manifest_url=f"sqlite:///{target}", sources=filesystem_source(corpus)
    )
    done = cli(config, "status")
    assert done.returncode == 1
    message = " ".join(done.stderr.split())
    assert "database server" not in message
    assert "writable" in message and str(target) in message


def test_a_state_dir_that_cannot_be_created_is_a_config_error_not_a_bug(
    tmp_path: Path, corpus: Path
) -> None:
    config = write_config(tmp_path, manifest_url=None, sources=filesystem_source(corpus))
    (tmp_path / "state").write_text("a file where the state directory should be")
    done = cli(config, "status")
    assert done.returncode == 2, done.stderr
    message = " ".join(done.stderr.split())
    assert "bug in Headwater" not in message
    assert "state directory" in message and "workspace.state_dir" in message


def test_control_characters_from_sources_are_escaped_in_human_output(
    tmp_path: Path, corpus: Path
) -> None:
    (corpus / "evil\x1b[2Jname.txt").write_text("vacation cleanup for the terminal\n")
    (corpus / "broken\x1b]0;owned\x07.pdf").write_bytes(b"%PDF-1.4 not really a pdf")
    config = write_config(
        tmp_path, manifest_url=None, sources=filesystem_source(corpus, access="{ public = true }")
    )
    assert cli(config, "sync").returncode == 0
    found = cli(config, "search", "terminal cleanup", "--mode", "keyword")
    assert found.returncode == 0, found.stderr
    assert "\x1b" not in found.stdout and "evil\\x1b[2Jname.txt" in found.stdout
    failures = cli(config, "failures")
    assert "\x1b" not in failures.stdout and "\x07" not in failures.stdout
    assert "broken\\x1b]0;owned\\x07.pdf" in failures.stdout
    # --json keeps the exact value (JSON escapes it itself).
    raw = json.loads(
        cli(config, "search", "terminal cleanup", "--mode", "keyword", "--json").stdout
    )
    assert raw["results"][0]["locator"].endswith("evil\x1b[2Jname.txt")


def test_an_unreachable_qdrant_sink_records_a_failed_run(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    config = write_config(
        tmp_path, manifest_url=manifest_url, sources=filesystem_source(corpus), indexes=QDRANT_DOWN
    )
    with Workspace.open(config) as ws:
        result = ws.sync()
        (run,) = result.runs
        assert run.status == "failed" and result.failed
        assert run.error is not None and "127.0.0.1:1" in run.error
        recorded = ws.manifest.runs.latest("docs")
        assert recorded is not None and recorded.status == "failed"
        assert recorded.error == run.error
        assert ws.manifest.runs.last_successful("docs") is None


def test_cli_sync_with_an_unreachable_qdrant_exits_1(tmp_path: Path, corpus: Path) -> None:
    config = write_config(
        tmp_path, manifest_url=None, sources=filesystem_source(corpus), indexes=QDRANT_DOWN
    )
    done = cli(config, "sync", "--json")
    assert done.returncode == 1
    (run,) = json.loads(done.stdout)["runs"]
    assert run["status"] == "failed" and "could not be opened" in run["error"]
    status = json.loads(cli(config, "status", "--json").stdout)
    assert status["sources"][0]["last_run"]["status"] == "failed"


def test_an_unreachable_manifest_server_is_one_error_line(tmp_path: Path, corpus: Path) -> None:
    """libpq's 'connection refused' carries a hint on a second line; the error stays one
    line (docs/cli.md: errors are one line), still naming the server and what to do."""
    url = "postgresql+psycopg://headwater@127.0.0.1:1/headwater"
    config = write_config(tmp_path, manifest_url=url, sources=filesystem_source(corpus))
    done = cli(config, "status")
    assert done.returncode == 1
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "127.0.0.1:1" in done.stderr and "database server runs" in done.stderr
