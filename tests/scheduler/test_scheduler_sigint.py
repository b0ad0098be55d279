"""``headwater run --once`` interrupted by Ctrl-C (SIGINT) exits 130 and releases leases.

A real process syncs a slow source (3000 files, one per batch); once a run is in
progress it gets SIGINT. The run stops after its current batch (``cancelled``, so the
next run resumes it), its lease is released, and the exit code says "cancelled" (130),
not "done" (0), so cron and CI see that the work was not finished.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path

from sched_helpers import Daemon, lease_rows, run_rows, sources_config, wait_for, write_files


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
