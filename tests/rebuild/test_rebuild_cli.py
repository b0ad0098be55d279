"""``headwater rebuild`` end to end through real subprocesses, on SQLite and PostgreSQL.

A model change (fake embedder, dimension 32 -> 48) is rebuilt with the source folder
gone; changes synced while a generation is built (edits, adds, deletes, ACL changes) are
in it after the switch; searches read the old generation until then; a rebuild killed
mid-build resumes without redoing finished documents.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from workspace_helpers import filesystem_source, write_config

HEADWATER = [sys.executable, "-m", "headwater.cli"]


def run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> Any:
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})}
    done = subprocess.run(
        [*HEADWATER, *args], cwd=cwd, env=full_env, capture_output=True, text=True, timeout=300
    )
    return done


def ok(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> Any:
    done = run(args, cwd, env)
    assert done.returncode == 0, done.stderr + done.stdout
    return json.loads(done.stdout) if "--json" in args else done.stdout


def configure(
    tmp_path: Path,
    manifest_url: str,
    corpus: Path,
    *,
    dimension: int,
    groups: str = '"staff"',
    extra: str = "",
) -> None:
    write_config(
        tmp_path,
        manifest_url=manifest_url,
        sources=filesystem_source(corpus, access=f"{{ groups = [{groups}] }}"),
        embedder=f'[embedder]\ntype = "fake"\ndimension = {dimension}\n',
        extra=extra,
    )


def titles(tmp_path: Path, query: str, group: str = "staff") -> list[str]:
    hits = ok(["search", query, "--group", group, "--mode", "keyword", "--json"], tmp_path)
    return [h["title"] for h in hits["results"]]


def generations(tmp_path: Path) -> dict[int, dict[str, Any]]:
    status = ok(["rebuild", "status", "--json"], tmp_path)
    return {g["generation"]: g for g in status["indexes"][0]["generations"]}


def test_a_model_change_is_rebuilt_with_the_source_folder_gone(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    configure(tmp_path, manifest_url, corpus, dimension=32)
    ok(["sync", "--json"], tmp_path)
    configure(tmp_path, manifest_url, corpus, dimension=48)
    shutil.rmtree(corpus)  # no source can be read: the rebuild uses the content store only
    report = ok(["rebuild", "--json"], tmp_path)
    entry = report["indexes"][0]
    assert entry["result"] == "switched" and entry["generation"] == 2, entry
    assert entry["index_report"]["documents"]["replaced"] == 5
    gens = generations(tmp_path)
    assert gens[1]["state"] == "previous" and gens[2]["state"] == "live"
    assert gens[1]["settings"]["model"]["dimension"] == 32
    assert gens[2]["settings"]["model"]["dimension"] == 48
    assert gens[2]["documents"] == gens[2]["documents_total"] == 5
    assert "Vacation policy" in titles(tmp_path, "vacation")
    vector = ok(["search", "vacation days", "--group", "staff", "--json"], tmp_path)
    assert vector["results"]
    again = ok(["rebuild", "--json"], tmp_path)
    assert again["indexes"][0]["result"] == "up_to_date"


def test_changes_synced_during_a_build_are_in_the_new_generation_after_the_switch(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    configure(tmp_path, manifest_url, corpus, dimension=32)
    ok(["sync", "--json"], tmp_path)
    configure(tmp_path, manifest_url, corpus, dimension=48)
    warned = run(["sync", "--json"], tmp_path)
    assert warned.returncode == 0, warned.stderr
    assert warned.stderr.count("headwater rebuild main") == 1, warned.stderr  # once per sync
    assert "embedder" in warned.stderr
    built = ok(["rebuild", "--no-switch", "--json"], tmp_path)
    assert built["indexes"][0]["result"] == "ready", built
    # While generation 2 waits: an edit, an add, a delete and an ACL change.
    (corpus / "guides" / "vacation.md").write_text("# Vacation policy\n\nNow 42 holidays.\n")
    (corpus / "notes" / "parking.md").write_text("# Parking\n\nBicycle parking is free.\n")
    (corpus / "guides" / "expenses.md").unlink()
    configure(tmp_path, manifest_url, corpus, dimension=48, groups='"staff", "contractors"')
    synced = run(["sync", "--json"], tmp_path)
    assert synced.returncode == 0 and "rebuild" not in synced.stderr, synced.stderr
    # Searches still read generation 1, which followed the changes with its own model.
    assert generations(tmp_path)[1]["state"] == "live"
    assert "Vacation policy" in titles(tmp_path, "holidays")
    assert titles(tmp_path, "reimbursement") == []
    assert generations(tmp_path)[2]["pending"] == 0  # the ready one received every write
    switched = ok(["rebuild", "switch", "main", "--json"], tmp_path)
    assert switched["result"] == "switched", switched
    gens = generations(tmp_path)
    assert gens[2]["state"] == "live" and gens[2]["documents"] == 5
    assert "Vacation policy" in titles(tmp_path, "holidays")
    assert "Parking" in titles(tmp_path, "bicycle")
    assert titles(tmp_path, "reimbursement") == []
    assert "Parking" in titles(tmp_path, "bicycle", group="contractors")


def test_a_killed_rebuild_resumes_without_redoing_finished_documents(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    small_batches = "[sync]\nindex_batch_size = 2\n"
    configure(tmp_path, manifest_url, corpus, dimension=32, extra=small_batches)
    ok(["sync", "--json"], tmp_path)
    configure(tmp_path, manifest_url, corpus, dimension=48, extra=small_batches)
    killed = run(["rebuild", "--json"], tmp_path, {"HEADWATER_FAILPOINTS": "after_index_batch"})
    assert killed.returncode == -9, killed.stderr
    gens = generations(tmp_path)
    assert gens[2]["state"] == "building" and gens[2]["documents"] == 2
    assert gens[1]["state"] == "live"
    resumed = ok(["rebuild", "--json"], tmp_path)
    entry = resumed["indexes"][0]
    assert entry["result"] == "switched" and entry["generation"] == 2, entry
    assert entry["index_report"]["documents"]["replaced"] == 3  # only what was left
    assert generations(tmp_path)[2]["documents"] == 5


def test_every_action_names_an_unknown_index_as_not_configured(
    tmp_path: Path, corpus: Path
) -> None:
    configure(tmp_path, f"sqlite:///{tmp_path / 'state' / 'manifest.db'}", corpus, dimension=32)
    for action in ("switch", "rollback", "cancel", "retire"):
        done = run(["rebuild", action, "nosuch"], tmp_path)
        assert done.returncode == 2, (action, done.stderr)
        assert "index 'nosuch' is not configured; expected one of: main" in done.stderr, action


def test_actions_print_one_readable_line_and_status_times_carry_their_offset(
    tmp_path: Path, corpus: Path
) -> None:
    configure(tmp_path, f"sqlite:///{tmp_path / 'state' / 'manifest.db'}", corpus, dimension=32)
    ok(["sync", "--json"], tmp_path)
    ok(["rebuild", "--force", "--no-switch", "--json"], tmp_path)
    gens = generations(tmp_path)
    assert gens[1]["created_at"].endswith("+00:00") and gens[1]["switched_at"].endswith("+00:00")
    assert gens[2]["created_at"].endswith("+00:00") and gens[2]["switched_at"] is None
    human = ok(["rebuild", "status"], tmp_path)
    assert f"created {gens[2]['created_at']}" in human, human  # the same instant as --json
    assert f"switched {gens[1]['switched_at']}" in human, human
    extra = run(["rebuild", "status", "extra"], tmp_path)
    assert extra.returncode == 2 and "takes no INDEX; got extra" in extra.stderr, extra.stderr
    lines = [
        (["switch", "main"], "switched main to generation 2: main@2 is live"),
        (["rollback", "main"], "rolled main back: main@1 is live (0 documents pending)"),
        (["retire", "main"], "nothing to retire for main: main@1 is live"),
    ]
    for args, line in lines:
        assert ok(["rebuild", *args], tmp_path).strip() == line, args
    ok(["rebuild", "--force", "--no-switch", "--json"], tmp_path)
    cancelled = ok(["rebuild", "cancel", "main"], tmp_path).strip()
    assert cancelled == "cancelled main@3 (its storage is deleted): main@1 is live"
