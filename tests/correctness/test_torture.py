"""The torture bench's CI subset: every process kind on one PostgreSQL manifest, faulted.

``bench/torture.py`` runs ``headwater sync`` loops, the scheduler, two Celery workers and
``serve --workers 2`` (taking interleaved pushes) over one PostgreSQL manifest while a
driver mutates the sources and sends SIGSTOP/SIGCONT/SIGKILL to random processes; then it
quiesces and checks its oracle. Here it runs for 30 seconds, longer where a loaded machine
needs it to reach 101 acknowledged pushes and 60 faults (docs/guarantees.md quotes a full
run): the oracle must hold, and the run must really have been faulted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_process_kind_faulted_at_random_loses_and_leaks_nothing() -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "torture.py"),
            "--seconds",
            "30",
            "--fault-every",
            "0.25",
            "--seed",
            "7",
            "--min-pushes",
            "101",
            "--min-faults",
            "60",
            "--max-seconds",
            "150",
        ],
        capture_output=True,
        text=True,
        timeout=420,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert done.stdout.strip(), done.stderr[-4000:]
    report = json.loads(done.stdout)
    assert report["faults_total"] >= 60, report
    assert report["pushes_acknowledged"] > 100, report
    assert report["search_hits_checked"] > 0, report
    assert report["push_server_errors"] == [], report
    assert report["lost_acknowledged_pushes"] == 0, report
    assert report["leaks"] == 0, report
    assert report["problems"] == [], report
    assert report["reconcile_exit"] == 0, report
    assert done.returncode == 0, report
