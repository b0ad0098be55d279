"""``headwater run --once`` interrupted by Ctrl-C (SIGINT) exits 130 and releases leases.

A real process syncs a slow source (3000 files, one per batch); once a run is in
progress it gets SIGINT. The run stops after its current batch (``cancelled``, so the
next run resumes it), its lease is released, and the exit code says "cancelled" (130),
not "done" (0), so cron and CI see that the work was not finished.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from sched_helpers import Daemon, cli, lease_rows, run_rows, sources_config, wait_for, write_files

from headwater.clock import as_utc, utcnow


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
    _, stderr = daemon.proc.communicate(timeout=60)
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
    roots = {"slow": write_files(tmp_path / "corpus", 1500)}
    config = sources_config(tmp_path, None, roots, source_extra="batch_size = 1\n")
    daemon = daemons(config, "--once")
    wait_for(
        lambda: any(r["status"] == "running" and r["seen"] > 0 for r in run_rows(url)),
        60,
        "a run in progress",
    )
    daemon.signal(signal.SIGINT)
    _, stderr = daemon.proc.communicate(timeout=60)
    assert daemon.proc.returncode == 130, stderr
    (cancelled,) = run_rows(url)
    assert cancelled["status"] == "cancelled" and cancelled["seen"] < 1500

    (status,) = json.loads(cli(config, "status", "--json").stdout)["sources"]
    assert as_utc(datetime.fromisoformat(status["next_due_at"])) <= utcnow()
    again = cli(config, "run", "--once", timeout=300)
    assert again.returncode == 0, again.stderr
    assert "starting sync of slow (resume)" in again.stderr
    latest = run_rows(url)[-1]
    assert latest["status"] == "succeeded" and latest["seen"] == 1500
