"""`headwater run` as real processes on one PostgreSQL manifest: sharing, takeover, stop."""

from __future__ import annotations

import itertools
import json
import signal
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from sched_helpers import Daemon, cli, lease_rows, run_rows, sources_config, wait_for, write_files


def test_two_schedulers_share_sources_and_never_overlap_one_source(
    tmp_path: Path, pg_url: str, daemons: Callable[..., Daemon]
) -> None:
    roots = {f"s{i}": write_files(tmp_path / f"corpus{i}", 5, f"s{i}-") for i in range(3)}
    config = sources_config(tmp_path, pg_url, roots)
    first, second = daemons(config), daemons(config)

    def each_source_ran_three_times_and_both_ran_some() -> bool:
        rows = run_rows(pg_url)
        done = [str(r["source_id"]) for r in rows if r["status"] == "succeeded"]
        owners = {r["owner"] for r in rows if r["owner"]}
        return all(done.count(source) >= 3 for source in roots) and len(owners) == 2

    wait_for(each_source_ran_three_times_and_both_ran_some, 120, "three runs of each source")
    for daemon in (first, second):
        code, stderr = daemon.stop()
        assert code == 0, stderr
    rows = run_rows(pg_url)
    by_source: dict[str, list[dict[str, object]]] = defaultdict(list)
    for row in rows:
        by_source[str(row["source_id"])].append(row)
    assert set(by_source) == set(roots)
    for source_id, runs in by_source.items():
        finished = [r for r in runs if r["status"] == "succeeded"]
        assert len(finished) >= 3, (source_id, [r["status"] for r in runs])
        for before, after in itertools.pairwise(runs):
            assert before["finished_at"] is not None
            assert before["finished_at"] <= after["started_at"], f"{source_id} runs overlap"
    owners = {r["owner"] for r in rows if r["owner"]}
    assert len(owners) == 2, owners  # both processes ran some of the sources
    assert lease_rows(pg_url) == []


def test_a_killed_run_is_resumed_by_the_next_scheduler(
    tmp_path: Path, pg_url: str, daemons: Callable[..., Daemon]
) -> None:
    roots = {"big": write_files(tmp_path / "corpus", 40)}
    config = sources_config(tmp_path, pg_url, roots, source_extra="batch_size = 2\n")
    crashing = daemons(config, env={"HEADWATER_FAILPOINTS": "after_checkpoint_save"})
    crashing.proc.wait(timeout=120)
    assert crashing.proc.returncode == -signal.SIGKILL
    (killed,) = run_rows(pg_url)
    assert killed["status"] == "running" and len(lease_rows(pg_url)) == 1

    result = cli(config, "run", "--once")
    assert result.returncode == 0, result.stderr
    (resumed,) = run_rows(pg_url)
    assert resumed["run_id"] == killed["run_id"]
    assert resumed["window_end"] == killed["window_end"]
    assert resumed["status"] == "succeeded" and resumed["attempts"] == 2
    shown = json.loads(cli(config, "runs", "show", str(killed["run_id"]), "--json").stdout)
    assert shown["resumed"] is True and shown["counts"]["seen"] == 40
    assert lease_rows(pg_url) == []


def test_sigterm_stops_a_run_promptly_and_releases_the_lease(
    tmp_path: Path, pg_url: str, daemons: Callable[..., Daemon]
) -> None:
    roots = {"slow": write_files(tmp_path / "corpus", 3000)}
    config = sources_config(tmp_path, pg_url, roots, source_extra="batch_size = 1\n")
    daemon = daemons(config)
    wait_for(
        lambda: any(r["status"] == "running" and r["seen"] > 0 for r in run_rows(pg_url)),
        60,
        "a run in progress",
    )
    assert len(lease_rows(pg_url)) == 1
    started = time.monotonic()
    code, stderr = daemon.stop(timeout=30)
    assert code == 0, stderr
    assert time.monotonic() - started < 10
    (run,) = run_rows(pg_url)
    assert run["status"] == "cancelled" and run["seen"] < 3000
    assert lease_rows(pg_url) == []
