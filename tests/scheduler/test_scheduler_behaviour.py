"""Pause, backoff, SIGHUP, and the `runs` / `source pause|resume` commands (SQLite)."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from sched_helpers import HEADWATER, Daemon, cli, run_rows, sources_config, wait_for, write_files
from sqlalchemy import create_engine

from headwater.clock import as_utc, utcnow
from headwater.manifest.schedule import ScheduleStore
from workspace_helpers import filesystem_source, write_config


def sqlite_url(directory: Path) -> str:
    return f"sqlite:///{directory / 'state' / 'manifest.db'}"


def test_a_paused_source_is_not_synced_until_resumed(tmp_path: Path) -> None:
    roots = {"a": write_files(tmp_path / "a", 2), "b": write_files(tmp_path / "b", 2)}
    config = sources_config(tmp_path, None, roots)
    paused = cli(config, "source", "pause", "b", "--json")
    assert paused.returncode == 0, paused.stderr
    assert json.loads(paused.stdout) == {"source": "b", "paused": True, "changed": True}
    again = json.loads(cli(config, "source", "pause", "b", "--json").stdout)
    assert again["changed"] is False

    assert cli(config, "run", "--once").returncode == 0
    assert {r["source_id"] for r in run_rows(sqlite_url(tmp_path))} == {"a"}
    status = {s["id"]: s for s in json.loads(cli(config, "status", "--json").stdout)["sources"]}
    assert status["b"]["paused"] is True and status["b"]["next_due_at"] is None
    assert status["a"]["paused"] is False and status["a"]["next_due_at"] is not None

    resumed = json.loads(cli(config, "source", "resume", "b", "--json").stdout)
    assert resumed == {"source": "b", "paused": False, "changed": True}
    assert cli(config, "run", "--once").returncode == 0
    assert {r["source_id"] for r in run_rows(sqlite_url(tmp_path))} == {"a", "b"}
    unknown = cli(config, "source", "pause", "nope")
    assert unknown.returncode == 2 and "not configured" in unknown.stderr


@pytest.mark.slow
def test_a_failing_source_backs_off_and_recovers(
    tmp_path: Path, daemons: Callable[..., Daemon]
) -> None:
    missing = tmp_path / "later"
    config = sources_config(
        tmp_path,
        None,
        {"flaky": missing},
        source_extra='refresh_every = "1s"\n',
        scheduler='[scheduler]\nfailure_backoff = "1s"\nbackoff_max = "4s"\n',
    )
    daemon = daemons(config)
    url = sqlite_url(tmp_path)
    wait_for(lambda: len(run_rows(url)) >= 4, 30, "four failed runs")
    status = json.loads(cli(config, "status", "--json").stdout)["sources"][0]
    assert status["backoff_until"] is not None
    write_files(missing, 2)
    wait_for(lambda: run_rows(url)[-1]["status"] == "succeeded", 30, "a successful retry")
    code, stderr = daemon.stop()
    assert code == 0, stderr
    rows = run_rows(url)
    failed = [r for r in rows if r["status"] == "failed"]
    first_success = next(i for i, r in enumerate(rows) if r["status"] == "succeeded")
    assert len(failed) >= 4 and failed[-1] is rows[first_success - 1]
    # A run after the retry may have been started and then cancelled by our SIGTERM.
    assert {r["status"] for r in rows[first_success:]} <= {"succeeded", "cancelled"}
    gaps = [
        (as_utc(b["started_at"]) - as_utc(a["finished_at"])).total_seconds()
        for a, b in itertools.pairwise(failed)
    ]
    # failure_backoff 1s doubling: ~1s, ~2s, ~4s (capped), each at least its wait
    assert gaps[0] >= 0.9 and gaps[1] >= 1.9 and gaps[2] >= 3.9, gaps
    assert "root" in str(failed[0]["error"])


@pytest.mark.slow
def test_sighup_picks_up_an_added_source(tmp_path: Path, daemons: Callable[..., Daemon]) -> None:
    roots = {"a": write_files(tmp_path / "a", 2)}
    config = sources_config(tmp_path, None, roots)
    daemon = daemons(config)
    url = sqlite_url(tmp_path)
    wait_for(lambda: run_rows(url), 30, "the first run")
    roots["b"] = write_files(tmp_path / "b", 2)
    sources_config(tmp_path, None, roots)
    daemon.signal(signal.SIGHUP)
    wait_for(lambda: any(r["source_id"] == "b" for r in run_rows(url)), 30, "a run of b")
    code, stderr = daemon.stop()
    assert code == 0, stderr
    assert "config reloaded: 2 sources" in stderr


def test_runs_list_show_and_filters(tmp_path: Path) -> None:
    roots = {"a": write_files(tmp_path / "a", 3), "b": tmp_path / "missing"}
    config = sources_config(tmp_path, None, roots)
    once = cli(config, "run", "--once")
    assert once.returncode == 1, once.stderr  # b failed
    listed = json.loads(cli(config, "runs", "--json").stdout)["runs"]
    assert {r["source"] for r in listed} == {"a", "b"}
    keys = {"run_id", "short_id", "source", "kind", "status", "owner", "started_at", "finished_at"}
    keys |= {"duration_s", "window", "counts", "fetched", "error", "resumed", "phases"}
    assert all(set(r) == keys for r in listed)
    ok = next(r for r in listed if r["source"] == "a")
    assert ok["status"] == "succeeded" and ok["kind"] == "sync" and ok["fetched"] == 3
    assert ok["owner"] and ok["counts"]["new"] == 3 and ok["resumed"] is False
    only_a = json.loads(cli(config, "runs", "a", "--json").stdout)["runs"]
    assert [r["run_id"] for r in only_a] == [ok["run_id"]]
    failed = json.loads(cli(config, "runs", "--status", "failed", "--json").stdout)["runs"]
    assert [r["source"] for r in failed] == ["b"] and "does not exist" in failed[0]["error"]
    shown = json.loads(cli(config, "runs", "show", ok["run_id"], "--json").stdout)
    assert shown == ok
    table = cli(config, "runs")
    assert table.returncode == 0 and ok["run_id"][:8] in table.stdout
    missing = cli(config, "runs", "show", "no-such-run")
    assert missing.returncode == 2 and "no run 'no-such-run'" in missing.stderr
    bad = cli(config, "runs", "--status", "weird")
    assert bad.returncode == 2


def test_run_history_retention_keeps_each_sources_newest_runs(tmp_path: Path) -> None:
    roots = {"a": write_files(tmp_path / "a", 1)}
    config = sources_config(tmp_path, None, roots)
    for _ in range(3):
        assert cli(config, "sync", "--no-index").returncode == 0
    engine = create_engine(sqlite_url(tmp_path))
    try:
        dropped = ScheduleStore(engine).purge_runs(utcnow())
    finally:
        engine.dispose()
    assert dropped == 2
    (kept,) = run_rows(sqlite_url(tmp_path))
    assert kept["status"] == "succeeded"


def test_run_once_exits_3_when_a_prune_is_blocked(tmp_path: Path) -> None:
    root = write_files(tmp_path / "a", 10)
    config = sources_config(tmp_path, None, {"a": root}, source_extra='refresh_every = "1s"\n')
    assert cli(config, "run", "--once").returncode == 0
    for path in sorted(root.iterdir())[:5]:
        path.unlink()
    time.sleep(1.1)
    blocked = cli(config, "run", "--once")
    assert blocked.returncode == 3, blocked.stderr
    assert run_rows(sqlite_url(tmp_path))[-1]["status"] == "succeeded"


def test_the_scheduler_drains_work_left_pending_before_it_started(
    tmp_path: Path, daemons: Callable[..., Daemon]
) -> None:
    """Documents synced without indexing (`sync --no-index`, or a scheduler stopped before
    its drain) are indexed by the next `headwater run`, though no run of it changes
    anything: they must not wait for the source's next change."""
    roots = {"a": write_files(tmp_path / "a", 3)}
    config = sources_config(tmp_path, None, roots, source_extra='refresh_every = "1h"\n')
    assert cli(config, "sync", "--no-index").returncode == 0

    def pending() -> int:
        status = json.loads(cli(config, "status", "--json").stdout)
        return int(status["indexes"]["main"]["pending"])

    assert pending() == 3
    daemon = daemons(config)
    wait_for(lambda: pending() == 0, 30, "the pending documents indexed")
    code, stderr = daemon.stop()
    assert code == 0, stderr
    assert len(run_rows(sqlite_url(tmp_path))) == 1  # no run was due: the drain did it
    found = json.loads(cli(config, "search", "document", "--as", "x@y.z", "--json").stdout)
    assert len(found["results"]) == 3


def test_json_log_lines_of_the_scheduler_carry_run_id_source_and_status(tmp_path: Path) -> None:
    """operations.md: `--log-format json` lines carry `run_id`, `source`, `status` fields,
    so a log shipper can filter the scheduler's lines by source without parsing `msg`."""
    config = sources_config(tmp_path, None, {"a": write_files(tmp_path / "a", 2)})
    once = cli(config, "run", "--once", "--log-format", "json")
    assert once.returncode == 0, once.stderr
    lines = [json.loads(line) for line in once.stderr.splitlines() if line.startswith("{")]
    (started,) = [x for x in lines if x["msg"].startswith("starting sync of a")]
    assert started["source"] == "a"
    (ended,) = [x for x in lines if x["msg"].startswith("run ") and " of a " in x["msg"]]
    (run,) = run_rows(sqlite_url(tmp_path))
    assert (ended["run_id"], ended["source"], ended["status"]) == (run["run_id"], "a", "succeeded")


def test_runs_of_a_source_taken_out_of_the_config_can_still_be_listed(tmp_path: Path) -> None:
    """`status` and `runs` show a source removed from the config; `runs ID` lists its
    history too (only an id neither configured nor in the manifest is a usage error)."""
    roots = {"a": write_files(tmp_path / "a", 1), "old": write_files(tmp_path / "old", 1)}
    config = sources_config(tmp_path, None, roots)
    assert cli(config, "sync", "--no-index").returncode == 0
    sources_config(tmp_path, None, {"a": roots["a"]})
    listed = cli(config, "runs", "old", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [r["source"] for r in json.loads(listed.stdout)["runs"]] == ["old"]
    assert cli(config, "runs", "never-was").returncode == 2


def test_run_once_exits_1_when_nothing_could_be_indexed(tmp_path: Path) -> None:
    """`run --once` syncs with index=False and then drains: an index that cannot be
    reached leaves every document pending, and cron must see it (exit 1, like `sync`
    and `index` do), not a clean 0."""
    down = '[[index]]\nname = "main"\ntype = "qdrant"\nurl = "http://127.0.0.1:1"\n'
    sources = filesystem_source(write_files(tmp_path / "a", 2), "a", access="{ public = true }")
    config = write_config(tmp_path, manifest_url=None, sources=sources, indexes=down)
    once = cli(config, "run", "--once")
    assert once.returncode == 1, once.stderr
    assert "indexing failed" in once.stderr and "127.0.0.1:1" in once.stderr
    assert run_rows(sqlite_url(tmp_path))[-1]["status"] == "succeeded"


def test_the_scheduler_logs_progress_of_a_long_run(tmp_path: Path) -> None:
    """operations.md: off a terminal, long work logs a progress line every interval even
    without -v (`headwater.progress: sync SOURCE: N items seen …`); a finished run's line
    is no longer repeated."""
    roots = {"slow": write_files(tmp_path / "slow", 600)}
    config = sources_config(tmp_path, None, roots, source_extra="batch_size = 1\n")
    done = subprocess.run(
        [HEADWATER, "-c", str(config), "run", "--once"],
        env={**os.environ, "HF_HUB_OFFLINE": "1", "HEADWATER_PROGRESS_INTERVAL": "0.3"},
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    progress = [i for i, x in enumerate(lines) if "headwater.progress: sync slow:" in x]
    assert any("items seen" in lines[i] for i in progress), done.stderr
    (ended,) = [i for i, x in enumerate(lines) if " of slow succeeded" in x]
    assert max(progress) < ended, done.stderr
