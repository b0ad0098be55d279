"""Operator basics of every command: version, help examples, exit codes, progress, logs.

Real `headwater` processes on real workspaces: exit codes as automation sees them,
progress through a pseudo-terminal and through a pipe, log formats and files, and a
secret from the environment that must never reach stderr or a log file.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from typer.testing import CliRunner

from headwater.cli.app import app, hoist_global_options, register_commands
from headwater.cli.examples import walk
from headwater.pipeline.embed.each import EmbedOutcome
from headwater.pipeline.embed.fake import FakeEmbedder
from headwater.workspace import Workspace
from pg_support import create_pg_database
from workspace_helpers import filesystem_source, write_config

HEADWATER = [sys.executable, "-m", "headwater.cli"]
PUBLIC = "{ public = true }"


def run(
    args: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})}
    return subprocess.run(
        [*HEADWATER, *args], cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout
    )


def write_files(root: Path, count: int) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        (root / f"doc{i:05d}.txt").write_text(f"document {i} about topic {i % 7}.\n" * 3)
    return root


@pytest.fixture
def workspace(tmp_path: Path, corpus: Path) -> Path:
    write_config(tmp_path, manifest_url=None, sources=filesystem_source(corpus, access=PUBLIC))
    return tmp_path


def test_version_prints_the_package_version() -> None:
    from importlib.metadata import version

    result = run(["--version"], Path.cwd())
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"headwater {version('headwater')}"


def test_every_command_help_has_an_example_and_completion_is_installable() -> None:
    register_commands()
    runner = CliRunner()
    commands = walk(app)
    assert len(commands) >= 15
    for path, _ in commands:
        result = runner.invoke(app, [*path.split(), "--help"], terminal_width=200)
        assert result.exit_code == 0, (path, result.output)
        assert "Example" in result.output, f"`headwater {path} --help` shows no example"
    root = runner.invoke(app, ["--help"], terminal_width=200)
    assert "--install-completion" in root.output and "--show-completion" in root.output


def test_global_options_after_the_command_move_in_front() -> None:
    args = ["sync", "docs", "-v", "--log-format", "json", "--log-file=x.log", "--", "-v"]
    assert hoist_global_options(args) == [
        "-v",
        "--log-format",
        "json",
        "--log-file=x.log",
        "sync",
        "docs",
        "--",
        "-v",
    ]


def test_exit_2_for_config_and_usage_errors(tmp_path: Path, workspace: Path) -> None:
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "headwater.toml").write_text("[workspace]\nbogus = 1\n")
    assert run(["-c", str(tmp_path / "bad"), "status"], tmp_path).returncode == 2
    wrong_format = run(["status", "--log-format", "xml"], workspace)
    assert wrong_format.returncode == 2 and "--log-format 'xml'" in wrong_format.stderr


def test_exit_2_when_a_run_fails_on_its_configuration(tmp_path: Path) -> None:
    """A root that went away fails the run on a ConfigError (fix `root`): exit 2, as for
    every configuration error; a run failing otherwise exits 1 (an unreachable index:
    test_core_cli_errors.test_cli_sync_with_an_unreachable_qdrant_exits_1)."""
    root = write_files(tmp_path / "gone", 3)
    write_config(tmp_path, manifest_url=None, sources=filesystem_source(root, access=PUBLIC))
    shutil.rmtree(root)
    result = run(["sync"], tmp_path)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "failed" in result.stdout


def test_exit_3_when_a_prune_is_blocked_by_the_safety_fraction(
    workspace: Path, corpus: Path
) -> None:
    assert run(["sync"], workspace).returncode == 0
    (corpus / "guides" / "expenses.md").unlink()
    (corpus / "readme.md").unlink()  # 2 of 5: past the 20% safety fraction
    pruned = run(["prune", "--json"], workspace)
    assert pruned.returncode == 3, pruned.stderr
    assert json.loads(pruned.stdout)["prunes"][0]["status"] == "blocked"
    synced = run(["sync", "--json"], workspace)
    assert synced.returncode == 3, synced.stderr
    assert json.loads(synced.stdout)["runs"][0]["prune_blocked"]["candidates"] == 2
    assert run(["prune", "--force"], workspace).returncode == 0


def test_exit_3_when_reconcile_finds_drift_without_repair(workspace: Path) -> None:
    assert run(["sync"], workspace).returncode == 0
    assert run(["reconcile"], workspace).returncode == 0
    (workspace / "state" / "index-main.db").unlink()  # the index is lost
    drift = run(["reconcile", "--json"], workspace)
    assert drift.returncode == 3, drift.stderr
    assert json.loads(drift.stdout)["sinks"]["main"]["missing"] == 5
    assert run(["reconcile", "--repair"], workspace).returncode == 0
    assert run(["reconcile"], workspace).returncode == 0


def test_sigint_mid_sync_cancels_the_run_and_exits_130(tmp_path: Path) -> None:
    root = write_files(tmp_path / "corpus", 3000)
    source = filesystem_source(root, access=PUBLIC, extra="batch_size = 1\n")
    write_config(tmp_path, manifest_url=None, sources=source)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HEADWATER_PROGRESS_INTERVAL": "0.2"}
    proc = subprocess.Popen(
        [*HEADWATER, "sync", "--no-index"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + 120
        line = ""
        while "sync docs:" not in line and time.monotonic() < deadline:
            line = proc.stderr.readline()  # the pipe gets a progress line every 0.2 s
        assert "items seen" in line, line
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, stderr
    runs = json.loads(run(["runs", "--json"], tmp_path).stdout)["runs"]
    assert runs[0]["status"] == "cancelled" and runs[0]["counts"]["seen"] < 3000


def read_pty(args: list[str], cwd: Path, timeout: float = 180) -> tuple[int, str]:
    """Run headwater with stdout and stderr on a pseudo-terminal; return code and output."""
    master, slave = pty.openpty()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "160", "TERM": "xterm"}
    proc = subprocess.Popen([*HEADWATER, *args], cwd=cwd, env=env, stdout=slave, stderr=slave)
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # the child closed the terminal
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
        code = proc.wait(timeout=30)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    return code, b"".join(chunks).decode("utf-8", "replace")


def test_progress_on_a_terminal_for_sync_and_index(tmp_path: Path) -> None:
    root = write_files(tmp_path / "corpus", 300)
    write_config(tmp_path, manifest_url=None, sources=filesystem_source(root, access=PUBLIC))
    code, output = read_pty(["sync", "--no-index"], tmp_path)
    assert code == 0, output
    assert re.search(r"sync docs.*300 items seen", output), output
    code, output = read_pty(["index"], tmp_path)
    assert code == 0, output
    assert re.search(r"indexing.*300/300 documents, \d+ chunks, [\d.]+ chunks/s", output), output


def test_progress_off_a_terminal_is_a_periodic_log_line(tmp_path: Path) -> None:
    root = write_files(tmp_path / "corpus", 300)
    write_config(tmp_path, manifest_url=None, sources=filesystem_source(root, access=PUBLIC))
    assert run(["sync", "--no-index"], tmp_path).returncode == 0
    result = run(["index", "--json"], tmp_path, env={"HEADWATER_PROGRESS_INTERVAL": "0.05"})
    assert result.returncode == 0, result.stderr
    lines = [ln for ln in result.stderr.splitlines() if "headwater.progress: indexing:" in ln]
    assert lines, result.stderr
    assert re.search(r"\d+/300 documents, \d+ chunks, [\d.]+ chunks/s, ETA", lines[-1])
    assert json.loads(result.stdout)["documents"]["replaced"] == 300  # stdout stays pure JSON
    bad = run(["index"], tmp_path, env={"HEADWATER_PROGRESS_INTERVAL": "soon"})
    assert bad.returncode == 2 and "HEADWATER_PROGRESS_INTERVAL" in bad.stderr


@pytest.fixture
def pg_url(postgres_server_url: str) -> Iterator[str]:
    url, drop = create_pg_database(postgres_server_url)
    try:
        yield url
    finally:
        drop()


def test_json_logs_after_the_command_to_a_file_never_show_a_secret(
    tmp_path: Path, corpus: Path, pg_url: str
) -> None:
    secret = "s3cr3t-Pa55w0rd-xyzzy"
    with_password = pg_url.replace("postgres@", "postgres:${HW_TEST_DB_PASSWORD}@")
    write_config(
        tmp_path, manifest_url=with_password, sources=filesystem_source(corpus, access=PUBLIC)
    )
    log_file = tmp_path / "logs" / "headwater.jsonl"
    result = run(
        ["sync", "--json", "-v", "--log-format", "json", "--log-file", str(log_file)],
        tmp_path,
        env={"HW_TEST_DB_PASSWORD": secret},
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["runs"][0]["status"] == "succeeded"
    records = [json.loads(line) for line in result.stderr.splitlines() if line.strip()]
    assert records and all({"ts", "level", "logger", "msg"} <= set(r) for r in records)
    messages = " ".join(r["msg"] for r in records)
    assert "run " in messages and "seen" in messages and "index batch" in messages
    assert any(r.get("run_id") for r in records)  # extras travel as fields
    written = log_file.read_text()
    assert [json.loads(line) for line in written.splitlines()] == records
    assert "postgres:***@" in written  # the manifest URL was logged, masked
    assert secret not in result.stderr and secret not in written and secret not in result.stdout


def test_sync_json_has_index_warnings_and_wall_times(tmp_path: Path, corpus: Path) -> None:
    write_config(tmp_path, manifest_url=None, sources=filesystem_source(corpus, access=PUBLIC))
    plain = run(["sync"], tmp_path)
    assert plain.returncode == 0 and "took" in plain.stdout
    no_access = f'[[source]]\nid = "open"\ntype = "filesystem"\nroot = "{corpus}"\n'
    config = tmp_path / "headwater.toml"
    config.write_text(config.read_text() + no_access)
    result = run(["sync", "--json"], tmp_path)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["index"]["documents"]["replaced"] == 5
    assert {"written", "embedded", "cache_hits"} <= set(data["index"]["chunks"])
    (warning,) = data["warnings"]
    assert "'open' has no `access`" in warning
    assert data["duration_s"] >= data["index"]["duration_s"] >= 0


class SlowEmbedder(FakeEmbedder):
    """0.5 s per embedding call, like a model on a busy CPU."""

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        time.sleep(0.5)
        return super().embed(texts)

    def embed_each(self, texts: Sequence[str]) -> list[EmbedOutcome]:
        time.sleep(0.5)
        return super().embed_each(texts)


def test_reported_durations_are_wall_time_including_indexing(tmp_path: Path) -> None:
    root = write_files(tmp_path / "corpus", 8)
    write_config(
        tmp_path,
        manifest_url=None,
        sources=filesystem_source(root, access=PUBLIC, extra="batch_size = 2\n"),
        extra="[sync]\nindex_batch_size = 2\n",
    )
    started = time.monotonic()
    with Workspace.open(tmp_path, embedder=SlowEmbedder(32)) as ws:
        report = ws.sync().as_dict()
    wall = time.monotonic() - started
    assert wall >= 2.0  # four embedding batches of 0.5 s
    assert report["duration_s"] >= 2.0, report
    assert report["index"]["duration_s"] >= 2.0, report
    assert report["duration_s"] <= wall


def test_progress_counts_prune_enumeration_and_reconcile(tmp_path: Path) -> None:
    """On a terminal, prune shows objects enumerated and reconcile documents compared,
    with a rate; off a terminal (or with --json) each becomes a log line."""
    root = write_files(tmp_path / "corpus", 300)
    write_config(tmp_path, manifest_url=None, sources=filesystem_source(root, access=PUBLIC))
    assert run(["sync"], tmp_path).returncode == 0
    code, output = read_pty(["prune", "--dry-run"], tmp_path)
    assert code == 0, output
    assert re.search(r"prune docs.*300 objects enumerated, [\d.]+ objects/s", output), output
    code, output = read_pty(["reconcile"], tmp_path)
    assert code == 0, output
    assert re.search(r"reconcile main.*300 documents compared, [\d.]+ documents/s", output), output

    piped = run(["reconcile", "--json"], tmp_path)
    assert piped.returncode == 0, piped.stderr
    assert re.search(
        r"headwater.progress: reconcile main: 300 documents compared, [\d.]+ documents/s",
        piped.stderr,
    ), piped.stderr
    assert json.loads(piped.stdout)["sinks"]["main"]["checked"] == 300  # stdout: pure JSON
    pruned = run(["prune", "--dry-run"], tmp_path)
    assert re.search(r"headwater.progress: prune docs: 300 objects enumerated", pruned.stderr)
