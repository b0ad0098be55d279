"""The CLI end to end, through real subprocesses: JSON shapes, exit codes, resume."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from headwater import Workspace
from workspace_helpers import filesystem_source, write_config

HEADWATER = [sys.executable, "-m", "headwater.cli"]


def run(
    args: list[str], cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})}
    return subprocess.run(
        [*HEADWATER, *args], cwd=cwd, env=full_env, capture_output=True, text=True, timeout=300
    )


@pytest.fixture
def workspace(tmp_path: Path, corpus: Path) -> Path:
    write_config(tmp_path, manifest_url=None, sources=filesystem_source(corpus))
    return tmp_path


def test_init_writes_a_config_and_gitignore(tmp_path: Path) -> None:
    result = run(["init", "new"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert "edit the [[source]] table" in result.stdout  # not eaten as Rich markup
    assert "[[source]]" in (tmp_path / "new" / "headwater.toml").read_text()
    assert ".headwater/" in (tmp_path / "new" / ".gitignore").read_text()
    again = run(["init", "new"], tmp_path)
    assert again.returncode == 2 and "already exists" in again.stderr


def test_sync_json_shape_and_status_and_doc_show(workspace: Path) -> None:
    result = run(["sync", "--json", "--no-index"], workspace)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert set(data) == {"runs", "skipped", "index", "warnings", "duration_s"}
    assert data["skipped"] == []
    (run_report,) = data["runs"]
    assert {"run_id", "source", "status", "window", "counts", "duration_s"} <= set(run_report)
    assert set(run_report["window"]) == {"start", "end"}
    assert {"seen", "new", "changed", "unchanged", "deleted", "failed"} <= set(run_report["counts"])
    assert run_report["counts"]["new"] == 5 and run_report["status"] == "succeeded"

    status = json.loads(run(["status", "--json"], workspace).stdout)
    assert set(status) >= {"sources", "pipeline_version"}
    (source,) = status["sources"]
    assert {"id", "type", "documents", "deleted", "failures_open", "last_run"} <= set(source)
    assert source["documents"] == 5 and source["last_run"]["run_id"] == run_report["run_id"]

    shown = run(["doc", "show", "--source", "docs", "--object", "readme.md", "--json"], workspace)
    assert shown.returncode == 0, shown.stderr
    doc = json.loads(shown.stdout)
    keys = {"document_id", "source", "object_id", "locator", "title", "state", "revision"}
    keys |= {"checksum", "source_version", "pipeline_version", "access", "indexes"}
    assert keys <= set(doc)
    by_id = json.loads(run(["doc", "show", doc["document_id"], "--json"], workspace).stdout)
    assert by_id["object_id"] == "readme.md"
    assert by_id["indexes"]["main"] == {"applied_revision": None, "chunks": 0}


def test_human_status_says_when_the_scheduler_will_not_start_a_source(workspace: Path) -> None:
    from headwater.cli.tables import schedule_state

    assert run(["source", "pause", "docs"], workspace).returncode == 0
    paused = run(["status"], workspace)
    assert paused.returncode == 0, paused.stderr
    assert "schedule" in paused.stdout and "paused" in paused.stdout
    assert run(["source", "resume", "docs"], workspace).returncode == 0
    assert "paused" not in run(["status"], workspace).stdout
    lease = {"owner": "host:1:ab", "expires_at": "2026-12-02T03:00:00+00:00"}
    assert schedule_state({"paused": False, "lease": lease}) == "running (host:1:ab)"
    backoff = {"paused": False, "lease": None, "backoff_until": "2026-12-02T03:00:00+00:00"}
    assert schedule_state(backoff) == "backoff until 2026-12-02T03:00:00+00:00"
    assert schedule_state({"paused": False, "lease": None, "backoff_until": None}) == ""


def test_config_errors_exit_2_with_every_problem(tmp_path: Path) -> None:
    (tmp_path / "headwater.toml").write_text(
        '[workspace]\nbogus = 1\n[[source]]\nid = "x"\ntype = "filesystem"\n'
    )
    result = run(["status"], tmp_path)
    assert result.returncode == 2
    assert "workspace.tenant" in result.stderr and "workspace.bogus" in result.stderr
    assert "source[0] (id=x).root" in result.stderr
    assert "Traceback" not in result.stderr
    verbose = run(["-v", "status"], tmp_path)
    assert verbose.returncode == 2 and "Traceback" in verbose.stderr


def test_unknown_document_exits_2(workspace: Path) -> None:
    result = run(["doc", "show", "deadbeef", "--json"], workspace)
    assert result.returncode == 2 and "no document" in result.stderr


def test_source_without_access_warns_once(tmp_path: Path, corpus: Path) -> None:
    source = f'[[source]]\nid = "open"\ntype = "filesystem"\nroot = "{corpus}"\n'
    write_config(tmp_path, manifest_url=None, sources=source)
    result = run(["sync", "--json", "--no-index"], tmp_path)
    assert result.returncode == 0
    assert result.stderr.count("visible to no one") == 1
    json.loads(result.stdout)  # the warning never pollutes the JSON


def test_a_source_whose_access_names_no_one_warns_too(tmp_path: Path, corpus: Path) -> None:
    sources = "".join(
        filesystem_source(corpus, source_id, access)
        for source_id, access in (
            ("empty", "{ groups = [] }"),
            ("private", "{ public = false }"),
            ("staff", '{ groups = ["staff"] }'),
        )
    )
    config = write_config(tmp_path, manifest_url=None, sources=sources)
    with Workspace.open(config) as ws:
        warned = [w for w in ws.warnings() if "visible to no one" in w]
    assert [w.split("'")[1] for w in warned] == ["empty", "private"]
    assert all("an empty `access`" in w for w in warned)


def test_failures_json_lists_corrupt_files(workspace: Path, corpus: Path) -> None:
    (corpus / "bad.pdf").write_bytes(b"%PDF-1.7 garbage")
    assert run(["sync", "--no-index"], workspace).returncode == 0
    data = json.loads(run(["failures", "--json"], workspace).stdout)
    (entry,) = data["failures"]
    assert entry["object_id"] == "bad.pdf" and entry["stage"] == "parse"


def test_killed_run_resumes_from_its_checkpoint_with_the_same_window(
    tmp_path: Path, corpus: Path
) -> None:
    for n in range(10):
        (corpus / f"more-{n:02d}.txt").write_text(f"more text number {n}\n")
    write_config(
        tmp_path, manifest_url=None, sources=filesystem_source(corpus, extra="batch_size = 2")
    )
    killed = run(
        ["sync", "--json", "--no-index"],
        tmp_path,
        {"HEADWATER_FAILPOINTS": "after_checkpoint_save"},
    )
    assert killed.returncode == -9
    from headwater import Workspace
    from headwater.clock import as_utc

    with Workspace.open(tmp_path) as ws:
        interrupted = ws.manifest.runs.interrupted("docs")
        assert interrupted is not None
        assert ws.manifest.runs.checkpoint(interrupted.run_id) is not None
        committed = ws.manifest.count_documents("docs")
        assert 2 <= committed < 15
    resumed = run(["sync", "--json", "--no-index"], tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    (report,) = json.loads(resumed.stdout)["runs"]
    assert report["run_id"] == interrupted.run_id
    assert report["resumed"] is True
    assert report["window"]["end"] == as_utc(interrupted.window_end).isoformat()
    assert report["counts"]["new"] == 15
    assert report["fetched"] == 15 - committed  # nothing committed before the kill is re-read


def test_search_usage_errors_exit_2_with_one_line(workspace: Path) -> None:
    assert run(["sync", "--json"], workspace).returncode == 0
    for args, said in (
        (["", "--as", "a@x.com"], "the query is empty"),
        (["   ", "--as", "a@x.com", "--mode", "vector"], "the query is empty"),
        (["vacation", "--k", "0"], "--k 0 must be at least 1"),
        (["vacation", "--mode", "fuzzy"], "not a search mode"),
        (["vacation", "--source", "nope"], "'nope' is not configured"),
        (["vacation", "--index", "nope"], "index 'nope' is not configured"),
        (["vacation", "--as", ""], "user '' is empty"),
    ):
        result = run(["search", *args, "--json"], workspace)
        assert result.returncode == 2, (args, result.stderr)
        assert said in result.stderr and result.stdout == "", args


def test_a_query_starting_with_a_dash_goes_after_double_dash(workspace: Path) -> None:
    assert run(["sync", "--json"], workspace).returncode == 0
    search = ["search", "--group", "staff", "--mode", "keyword", "--json", "--"]
    for query in ("-vacation", "--vacation", "-v", "--json"):
        found = run([*search, query], workspace)
        assert found.returncode == 0, (query, found.stderr)
        titles = [r["title"] for r in json.loads(found.stdout)["results"]]
        if "vacation" in query:
            assert titles[:1] == ["Vacation policy"], query
    # Without `--` it is read as options; the error says where the query goes.
    bare = run(["search", "-vacation"], workspace)
    assert bare.returncode == 2 and bare.stdout == ""
    assert "goes after `--`: `headwater search -- -vacation`" in bare.stderr, bare.stderr


def test_failures_and_dlq_of_an_unknown_source_exit_2(workspace: Path, corpus: Path) -> None:
    (corpus / "bad.pdf").write_bytes(b"%PDF-1.7 garbage")
    assert run(["sync", "--no-index"], workspace).returncode == 0
    for command in (["failures"], ["dlq", "list"]):
        known = run([*command, "--source", "docs", "--json"], workspace)
        assert known.returncode == 0 and len(next(iter(json.loads(known.stdout).values()))) == 1
        typo = run([*command, "--source", "dcos", "--json"], workspace)
        assert typo.returncode == 2 and typo.stdout == "", command
        assert "'dcos' is neither configured nor in the manifest" in typo.stderr
    # A source taken out of the config is still known to the manifest: its entries list.
    config = workspace / "headwater.toml"
    config.write_text(config.read_text().split("[[source]]")[0])
    gone = run(["failures", "--source", "docs", "--json"], workspace)
    assert gone.returncode == 0 and len(json.loads(gone.stdout)["failures"]) == 1


def test_usage_errors_are_one_line_with_exit_2(workspace: Path) -> None:
    for args, said in (
        (["sync", "--bogus"], "error: No such option: --bogus; see `headwater sync --help`."),
        (["search"], "error: Missing argument 'query'; see `headwater search --help`."),
        (["nosuchcmd"], "error: No such command 'nosuchcmd'; see `headwater --help`."),
    ):
        result = run(args, workspace)
        assert result.returncode == 2, args
        assert result.stderr.strip() == said, result.stderr
    assert run(["dlq"], workspace).returncode == 2  # no arguments: the help, as before


def test_a_source_named_twice_syncs_once(workspace: Path) -> None:
    result = run(["sync", "docs", "docs", "--json", "--no-index"], workspace)
    assert result.returncode == 0, result.stderr
    assert [r["source"] for r in json.loads(result.stdout)["runs"]] == ["docs"]
