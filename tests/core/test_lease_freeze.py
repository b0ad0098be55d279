"""An owner frozen inside a transaction, and owners that look alike from the outside.

Real processes (``tests/lease_driver.py``). The first one stops itself with SIGSTOP
inside a batch transaction (the ``inside_batch_commit:stop`` failpoint: fenced, not
committed). On PostgreSQL a second sync started after the lease expired takes it over
within the documented bound (``lease_seconds`` + 10 s after the expiry at the latest;
the test allows 2 x ``lease_seconds`` + 10 s), and the first one, continued, commits
nothing. On SQLite the frozen process keeps the write lock, so the second one reports
who holds it after its bounded busy wait, and the first one, continued, finishes.

Two processes that are each ``pid 1`` in their own PID namespace (``unshare --pid
--fork --mount-proc``: two containers on one host) are two owners: the second is
refused while the first holds the lease.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, text

from headwater.clock import as_utc, utcnow
from headwater.manifest import schema as t
from headwater.manifest.store import Manifest
from workspace_helpers import write_config

TESTS = Path(__file__).resolve().parents[1]
DRIVER = TESTS / "lease_driver.py"
LEASE = 4
BOUND = 2 * LEASE + 10  # the ceiling on a takeover after the lease expired
FREEZE = {"HEADWATER_FAILPOINTS": "inside_batch_commit:stop"}


def _config(tmp_path: Path, manifest_url: str, count: int = 6) -> Path:
    markers = tmp_path / "markers"
    markers.mkdir()
    source = (
        f'[[source]]\nid = "slow"\ntype = "slow"\ncount = {count}\n'
        f'marker_dir = "{markers}"\nbatch_size = 1\naccess = {{ public = true }}\n'
    )
    extra = f"[sync]\nlease_seconds = {LEASE}\n"
    return write_config(tmp_path, manifest_url=manifest_url, sources=source, extra=extra)


def _spawn(config: Path, *command: str, **env: str) -> subprocess.Popen[str]:
    environment = dict(os.environ)
    path = [str(TESTS.parent / "src"), str(TESTS)]
    environment["PYTHONPATH"] = os.pathsep.join([*path, environment.get("PYTHONPATH", "")])
    environment.update(env)
    return subprocess.Popen(
        [*command, sys.executable, str(DRIVER), str(config), "--no-index"],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for(condition: Callable[[], bool], what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {seconds} s waiting for {what}")
        time.sleep(0.05)


def _stopped(process: subprocess.Popen[str]) -> bool:
    stat = Path(f"/proc/{process.pid}/stat").read_text()
    return stat.rpartition(")")[2].split()[0] == "T"


def _lease(manifest: Manifest) -> Any:
    with manifest.engine.connect() as conn:
        return conn.execute(select(t.leases).where(t.leases.c.source_id == "slow")).one()


def _snapshot(manifest: Manifest) -> dict[str, list[Any]]:
    tables = (t.documents, t.runs, t.checkpoints, t.leases, t.tombstones)
    with manifest.engine.connect() as conn:
        return {
            table.name: sorted(tuple(map(str, row)) for row in conn.execute(select(table)))
            for table in tables
        }


def _frozen_inside_a_batch(config: Path, manifest: Manifest) -> tuple[subprocess.Popen[str], Any]:
    """The first process, stopped inside its first batch transaction, once its lease
    (as committed) has expired; and that lease."""
    first = _spawn(config, **FREEZE)
    _wait_for(lambda: _stopped(first), "the first process to stop inside its batch commit")
    lease = _lease(manifest)
    _wait_for(lambda: utcnow() > as_utc(lease.expires_at), "the frozen owner's lease to expire")
    return first, lease


def _finish(process: subprocess.Popen[str]) -> tuple[str, str]:
    process.send_signal(signal.SIGCONT)
    return process.communicate(timeout=120)


@pytest.mark.parametrize("manifest_url", ["postgres"], indirect=True)
def test_an_owner_frozen_inside_a_batch_is_taken_over_within_the_bound(
    tmp_path: Path, manifest_url: str
) -> None:
    config = _config(tmp_path, manifest_url)
    manifest = Manifest.open(manifest_url)
    first = second = None
    try:
        first, frozen = _frozen_inside_a_batch(config, manifest)
        second = _spawn(config)
        expired = as_utc(frozen.expires_at)
        _wait_for(
            lambda: _lease(manifest).epoch > frozen.epoch,
            "the second process to take the lease over",
            seconds=(expired + timedelta(seconds=BOUND) - utcnow()).total_seconds(),
        )
        stdout, stderr = second.communicate(timeout=120)
        assert second.returncode == 0, stderr
        assert '["succeeded"]' in stdout
        taker = _lease(manifest).owner
        assert taker != frozen.owner and _lease(manifest).takeovers == 1
        written = _snapshot(manifest)
        _, stderr = _finish(first)
        assert first.returncode == 1, stderr
        assert "LeaseLost" in stderr and f"taken over by {taker}" in stderr
        assert f"epoch {frozen.epoch}, owner {frozen.owner}" in stderr
        assert _snapshot(manifest) == written  # the woken owner committed nothing
        run = manifest.runs.latest("slow")
        assert run is not None and run.status == "succeeded" and run.attempts == 2
        assert manifest.count_documents("slow") == 6
    finally:
        for process in (first, second):
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGCONT)
                process.kill()
                process.communicate()
        manifest.close()


def _idle_in_transaction(manifest: Manifest) -> int:
    with manifest.engine.connect() as conn:
        query = (
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND state LIKE 'idle in transaction%'"
        )
        return int(conn.execute(text(query)).scalar_one())


@pytest.mark.parametrize("manifest_url", ["postgres"], indirect=True)
def test_an_owner_woken_after_its_session_ended_but_not_taken_over_retries_the_batch(
    tmp_path: Path, manifest_url: str
) -> None:
    config = _config(tmp_path, manifest_url)
    manifest = Manifest.open(manifest_url)
    first = None
    try:
        first, frozen = _frozen_inside_a_batch(config, manifest)
        assert _idle_in_transaction(manifest) == 1  # its batch, fenced, not committed
        _wait_for(
            lambda: _idle_in_transaction(manifest) == 0,
            "the manifest server to end the frozen transaction",
            seconds=BOUND,
        )
        stdout, stderr = _finish(first)
        assert first.returncode == 0, stderr
        assert '["succeeded"]' in stdout
        assert "the manifest ended this batch's connection" in stderr  # logged, retried
        run = manifest.runs.latest("slow")
        assert run is not None and run.status == "succeeded"
        assert manifest.count_documents("slow") == 6
        assert _lease(manifest).epoch == frozen.epoch  # nobody took it over
    finally:
        if first is not None and first.poll() is None:
            first.send_signal(signal.SIGCONT)
            first.kill()
            first.communicate()
        manifest.close()


@pytest.mark.parametrize("manifest_url", ["sqlite"], indirect=True)
def test_a_writer_blocked_by_an_owner_frozen_inside_a_batch_names_it(
    tmp_path: Path, manifest_url: str
) -> None:
    config = _config(tmp_path, manifest_url)
    manifest = Manifest.open(manifest_url)
    first = second = None
    try:
        first, frozen = _frozen_inside_a_batch(config, manifest)
        second = _spawn(config)
        _, stderr = second.communicate(timeout=120)  # a bounded busy wait, then the report
        assert second.returncode == 1, stderr
        assert f"is busy: process {first.pid} (stopped:" in stderr
        assert "holds its write lock, since at least" in stderr
        assert f"it is lease owner {frozen.owner} of source 'slow'" in stderr
        assert f"kill -CONT {first.pid}" in stderr
        assert _lease(manifest).epoch == frozen.epoch  # no takeover: SQLite cannot
        stdout, stderr = _finish(first)
        assert first.returncode == 0, stderr  # continued, it still owns the run
        assert '["succeeded"]' in stdout
        assert manifest.count_documents("slow") == 6
    finally:
        for process in (first, second):
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGCONT)
                process.kill()
                process.communicate()
        manifest.close()


UNSHARE = ("unshare", "--pid", "--fork", "--mount-proc")


def test_two_pid_1_processes_in_their_own_pid_namespaces_are_two_owners(
    tmp_path: Path, manifest_url: str
) -> None:
    config = _config(tmp_path, manifest_url)
    markers = tmp_path / "markers"
    manifest = Manifest.open(manifest_url)
    first = second = None
    try:
        first = _spawn(config, *UNSHARE, LEASE_PAUSE_AT="2")
        _wait_for(lambda: (markers / "paused").exists(), "the first process to hold the lease")
        assert (markers / "paused").read_text() == "1"  # pid 1 in its namespace
        held = _lease(manifest)
        second = _spawn(config, *UNSHARE)
        _, stderr = second.communicate(timeout=120)
        assert second.returncode == 1, stderr
        assert f"is being synced by {held.owner}" in stderr
        assert ":1:" in held.owner  # both are pid 1, still two owners
        after = _lease(manifest)
        assert (after.owner, after.epoch, after.takeovers) == (held.owner, held.epoch, 0)
        (markers / "release").write_text("go")
        stdout, stderr = first.communicate(timeout=120)
        assert first.returncode == 0, stderr
        assert '["succeeded"]' in stdout
        assert manifest.count_documents("slow") == 6
    finally:
        (markers / "release").write_text("go")
        for process in (first, second):
            if process is not None and process.poll() is None:
                process.kill()
                process.communicate()
        manifest.close()
