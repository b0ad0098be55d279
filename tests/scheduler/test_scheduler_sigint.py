"""``headwater run --once`` interrupted by Ctrl-C (SIGINT) exits 130 and releases leases.

A real process syncs a slow source (3000 files, one per batch); once a run is in
progress it gets SIGINT. The run stops after its current batch (``cancelled``, so the
next run resumes it), its lease is released, and the exit code says "cancelled" (130),
not "done" (0), so cron and CI see that the work was not finished.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from sched_helpers import Daemon, cli, lease_rows, run_rows, sources_config, wait_for, write_files

from headwater.clock import as_utc, utcnow
from workspace_helpers import write_config


def test_run_once_interrupted_by_sigint_exits_130_with_leases_released(
    tmp_path: Path, manifest_url: str, daemons: Callable[..., Daemon]
) -> None:
    roots = {"slow": write_files(tmp_path / "corpus", 3000)}
    config = sources_config(tmp_path, manifest_url, roots, source_extra="batch_size = 1\n")
    daemon = daemons(config, "--once")
    wait_for(
        lambda: any(r["status"] == "running" and r["seen"] > 0 for r in run_rows(manifest_url)),
        60,
        "a run in progress",
    )
    assert len(lease_rows(manifest_url)) == 1
    daemon.signal(signal.SIGINT)
    stderr = daemon.wait(60)
    assert daemon.proc.returncode == 130, stderr
    (run,) = run_rows(manifest_url)
    assert run["status"] == "cancelled" and run["seen"] < 3000
    assert lease_rows(manifest_url) == []
    assert "Traceback" not in stderr


def test_a_cancelled_run_is_due_again_at_once_not_a_refresh_later(
    tmp_path: Path, daemons: Callable[..., Daemon]
) -> None:
    """A run stopped by Ctrl-C did not cover its window: the next `run --once` (cron) must
    sync the source again, not wait `refresh_every` (1h) after the cancelled start."""
    url = f"sqlite:///{tmp_path / 'state' / 'manifest.db'}"
    roots = {"slow": write_files(tmp_path / "corpus", 500)}
    config = sources_config(tmp_path, None, roots, source_extra="batch_size = 1\n")
    daemon = daemons(config, "--once")
    wait_for(
        lambda: any(r["status"] == "running" and r["seen"] > 0 for r in run_rows(url)),
        60,
        "a run in progress",
    )
    daemon.signal(signal.SIGINT)
    stderr = daemon.wait(60)
    assert daemon.proc.returncode == 130, stderr
    (cancelled,) = run_rows(url)
    assert cancelled["status"] == "cancelled" and cancelled["seen"] < 500

    (status,) = json.loads(cli(config, "status", "--json").stdout)["sources"]
    assert as_utc(datetime.fromisoformat(status["next_due_at"])) <= utcnow()
    again = cli(config, "run", "--once", timeout=300)
    assert again.returncode == 0, again.stderr
    assert "starting sync of slow (resume)" in again.stderr
    latest = run_rows(url)[-1]
    assert latest["status"] == "succeeded" and latest["seen"] == 500


def test_sigint_stops_a_run_waiting_to_retry_a_transient_error(
    tmp_path: Path, daemons: Callable[..., Daemon]
) -> None:
    """A source that refuses connections is retried from its checkpoint (`run_attempts`)
    after a growing wait; Ctrl-C during that wait stops the run at once as `cancelled`
    instead of sitting out every remaining attempt and recording it `failed`."""
    with socket.socket() as probe:  # a local port nothing listens on: connection refused
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    source = (
        '[[source]]\nid = "down"\ntype = "web"\n'
        f'start_urls = ["http://127.0.0.1:{port}/"]\nmax_attempts = 1\n'
        "access = { public = true }\n"
    )
    config = write_config(
        tmp_path, manifest_url=None, sources=source, extra="[sync]\nrun_attempts = 6\n"
    )
    url = f"sqlite:///{tmp_path / 'state' / 'manifest.db'}"
    daemon = daemons(config, "--once")
    wait_for(lambda: run_rows(url), 60, "the run to start")
    time.sleep(2.5)  # past the first attempts: waiting 4, 8 and 16 s for the next ones
    daemon.signal(signal.SIGINT)
    started = time.monotonic()
    stderr = daemon.wait(60)
    assert daemon.proc.returncode == 130, stderr
    assert time.monotonic() - started < 3, stderr
    (run,) = run_rows(url)
    assert run["status"] == "cancelled", run
    assert lease_rows(url) == []


def test_sigterm_while_enumerating_for_deletes_stops_the_run_at_once(
    tmp_path: Path, daemons: Callable[..., Daemon]
) -> None:
    """After a web crawl the runner enumerates the site again for deletes (every page a
    conditional request, answered 304); SIGTERM then stops that enumeration at once: the run ends `cancelled`
    (due again at once), nothing is deleted, instead of the process sitting out the
    whole enumeration (and systemd's stop timeout)."""
    site = tmp_path / "site"
    site.mkdir()
    links = "".join(f'<a href="/p{i}.html">{i}</a> ' for i in range(80))
    (site / "index.html").write_text(f"<html><body>{links}</body></html>")
    for i in range(80):
        (site / f"p{i}.html").write_text(f"<html><body><h1>Page {i}</h1></body></html>")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    access_log = (tmp_path / "access.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        cwd=site, stdout=subprocess.DEVNULL, stderr=access_log,
    )  # fmt: skip
    try:
        source = (
            '[[source]]\nid = "site"\ntype = "web"\n'
            f'start_urls = ["http://127.0.0.1:{port}/"]\nrespect_robots = false\n'
            "requests_per_second = 10.0\naccess = { public = true }\n"
        )
        config = write_config(tmp_path, manifest_url=None, sources=source)
        url = f"sqlite:///{tmp_path / 'state' / 'manifest.db'}"
        daemon = daemons(config)
        wait_for(  # the enumeration asks again for pages it read: 304 Not Modified
            lambda: " 304 " in (tmp_path / "access.log").read_text(),
            60,
            "the enumeration for deletes under way",
        )
        time.sleep(1.0)
        started = time.monotonic()
        code, stderr = daemon.stop()
        assert code == 0, stderr
        assert time.monotonic() - started < 4, stderr
        (run,) = run_rows(url)
        assert run["status"] == "cancelled" and run["deleted"] == 0, run
        assert lease_rows(url) == []
    finally:
        server.terminate()
        server.wait(timeout=30)
        access_log.close()
