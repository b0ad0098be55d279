"""Fenced leases: a heartbeat keeps a lease alive, and a stale owner never commits.

The process tests run ``tests/lease_driver.py`` as real separate processes on SQLite and
PostgreSQL: one is frozen with SIGSTOP past its lease, another takes the run over and
finishes it, and the frozen one, once continued, commits nothing and exits with an error.
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
from sqlalchemy import select, update

from headwater import Workspace
from headwater.clock import utcnow
from headwater.errors import FatalError, LeaseLost
from headwater.manifest import schema as t
from headwater.manifest.leases import Heartbeat, Lease
from headwater.manifest.records import BatchCommit, TombstoneWrite
from headwater.manifest.store import Manifest
from headwater.sync.report import RunReport
from workspace_helpers import filesystem_source, write_config

TESTS = Path(__file__).resolve().parents[1]
DRIVER = TESTS / "lease_driver.py"
LEASE = 2


def _expire(manifest: Manifest, source_id: str) -> None:
    """What time does to a lease whose owner stopped renewing it."""
    with manifest.engine.begin() as conn:
        conn.execute(
            update(t.leases)
            .where(t.leases.c.source_id == source_id)
            .values(expires_at=utcnow() - timedelta(seconds=1))
        )


def test_a_takeover_fences_every_commit_of_the_stale_owner(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    config = write_config(tmp_path, manifest_url=manifest_url, sources=filesystem_source(corpus))
    with Workspace.open(config) as ws:
        ws.sync(index=False)
        manifest, leases = ws.manifest, ws.manifest.runs.leases
        doc = ws.document(source="docs", object_id="readme.md")
        run_id = ws.manifest.runs.latest("docs").run_id  # type: ignore[union-attr]
        stale = leases.acquire("docs", "host-a:1", LEASE)
        _expire(manifest, "docs")
        fresh = leases.acquire("docs", "host-b:2", LEASE)
        assert fresh.epoch == stale.epoch + 1
        batch = BatchCommit(
            tombstones=[TombstoneWrite(doc["document_id"], "docs", "readme.md", 9, None, "manual")]
        )
        with pytest.raises(LeaseLost, match="taken over"):
            manifest.commit_batch(run_id, batch, lease=stale)
        assert ws.document(doc["document_id"])["state"] == "active"
        saved = manifest.runs.checkpoint(run_id)
        with pytest.raises(LeaseLost):
            manifest.runs.save_checkpoint(run_id, "docs", '{"stale": 1}', lease=stale)
        assert manifest.runs.checkpoint(run_id) == saved
        before = manifest.runs.get(run_id)
        with pytest.raises(LeaseLost):
            manifest.runs.finish(run_id, "failed", before.counts, 1.0, lease=stale)  # type: ignore[union-attr]
        assert manifest.runs.get(run_id).status == before.status  # type: ignore[union-attr]
        assert not leases.renew(stale)
        leases.release(stale)  # a stale release leaves the new owner's lease alone
        with pytest.raises(FatalError, match="host-b:2"):
            leases.acquire("docs", "host-c:3", LEASE)
        manifest.commit_batch(run_id, batch, lease=fresh)
        assert ws.document(doc["document_id"])["state"] == "deleted"
        leases.release(fresh)
        assert leases.acquire("docs", "host-c:3", LEASE).epoch == fresh.epoch + 1


def test_a_heartbeat_notices_a_lost_lease(tmp_path: Path, manifest_url: str) -> None:
    manifest = Manifest.open(manifest_url)
    try:
        manifest.ensure_source("s", "memory")
        leases = manifest.runs.leases
        mine = leases.acquire("s", "host-a:1", 1)
        beat = Heartbeat(leases, mine).start()
        time.sleep(1.5)  # several beats: each renewal keeps it
        with pytest.raises(FatalError):
            leases.acquire("s", "host-b:2", 1)
        beat.stop()
        _expire(manifest, "s")
        leases.acquire("s", "host-b:2", 1)
        beat = Heartbeat(leases, mine).start()
        deadline = time.monotonic() + 5
        while not beat.lost.is_set() and time.monotonic() < deadline:
            time.sleep(0.05)
        beat.stop()
        with pytest.raises(LeaseLost):
            beat.check()
    finally:
        manifest.close()


def test_a_lease_taken_again_by_its_own_owner_fences_the_older_epoch(manifest_url: str) -> None:
    """The epoch, not only the owner, is the token: a second run of one process (one
    owner) that took the lease again leaves the first run's lease stale."""
    manifest = Manifest.open(manifest_url)
    try:
        manifest.ensure_source("s", "memory")
        leases = manifest.runs.leases
        older = leases.acquire("s", "host-a:1", LEASE)
        newer = leases.acquire("s", "host-a:1", LEASE)
        assert (newer.owner, newer.epoch) == (older.owner, older.epoch + 1)
        run_id = manifest.runs.start("s", None, utcnow())
        with pytest.raises(LeaseLost, match=f"epoch {older.epoch}, owner host-a:1"):
            manifest.runs.save_checkpoint(run_id, "s", '{"stale": 1}', lease=older)
        with pytest.raises(LeaseLost):
            manifest.commit_batch(run_id, BatchCommit(), lease=older)
        assert manifest.runs.checkpoint(run_id) is None
        assert not leases.renew(older)
        assert leases.renew(newer)
        manifest.runs.save_checkpoint(run_id, "s", '{"fresh": 1}', lease=newer)
        assert manifest.runs.checkpoint(run_id) == '{"fresh": 1}'
    finally:
        manifest.close()


# -- two real processes ------------------------------------------------------------------


def _slow_config(tmp_path: Path, manifest_url: str, count: int, enumerate_seconds: float) -> Path:
    markers = tmp_path / "markers"
    markers.mkdir()
    source = (
        f'[[source]]\nid = "slow"\ntype = "slow"\ncount = {count}\n'
        f'marker_dir = "{markers}"\nenumerate_seconds = {enumerate_seconds}\n'
        "batch_size = 1\naccess = { public = true }\n"
    )
    extra = f"[sync]\nlease_seconds = {LEASE}\n"
    return write_config(tmp_path, manifest_url=manifest_url, sources=source, extra=extra)


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    path = [str(TESTS.parent / "src"), str(TESTS)]
    env["PYTHONPATH"] = os.pathsep.join([*path, env.get("PYTHONPATH", "")])
    env.update(extra)
    return env


def _spawn(config: Path, *args: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(DRIVER), str(config), *args],
        env=_env(**env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for(condition: Callable[[], bool], what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def _snapshot(manifest: Manifest) -> dict[str, list[Any]]:
    tables = (t.documents, t.document_indexes, t.runs, t.checkpoints, t.leases, t.tombstones)
    with manifest.engine.connect() as conn:
        return {
            table.name: sorted(tuple(map(str, row)) for row in conn.execute(select(table)))
            for table in tables
        }


def _lease_expiry(manifest: Manifest) -> object:
    with manifest.engine.connect() as conn:
        return conn.execute(
            select(t.leases.c.expires_at).where(t.leases.c.source_id == "slow")
        ).scalar()


def test_a_frozen_owner_is_taken_over_and_commits_nothing_after(
    tmp_path: Path, manifest_url: str
) -> None:
    from lease_driver import SlowConnector, object_ids

    config = _slow_config(tmp_path, manifest_url, count=8, enumerate_seconds=0)
    markers = tmp_path / "markers"
    first = _spawn(config, "--no-index", LEASE_PAUSE_AT="3")
    manifest = Manifest.open(manifest_url)
    try:
        _wait_for(lambda: (markers / "paused").exists(), "the first process to reach object 3")
        expiry = _lease_expiry(manifest)
        _wait_for(lambda: _lease_expiry(manifest) != expiry, "a heartbeat of the first process")
        first.send_signal(signal.SIGSTOP)  # frozen right after a beat, outside any transaction
        time.sleep(LEASE + 1.5)
        second = subprocess.run(
            [sys.executable, str(DRIVER), str(config)],
            env=_env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert second.returncode == 0, second.stderr
        assert '["succeeded"]' in second.stdout
        written = _snapshot(manifest)
        (markers / "release").write_text("go")
        first.send_signal(signal.SIGCONT)
        _, stderr = first.communicate(timeout=120)
        assert first.returncode == 1, stderr
        assert "LeaseLost" in stderr and "taken over" in stderr
        assert _snapshot(manifest) == written
        run = manifest.runs.latest("slow")
        assert run is not None and run.status == "succeeded" and run.attempts == 2
        assert len(manifest.runs.recent("slow")) == 1  # the second process resumed the run
        assert manifest.count_documents("slow") == 8
    finally:
        if first.poll() is None:
            first.send_signal(signal.SIGCONT)
            first.kill()
            first.communicate()
        manifest.close()
    with Workspace.open(config, connector_types={"slow": SlowConnector}) as ws:
        sink = ws.sink("main")
        for object_id in object_ids(8):
            assert sink.count(ws.document(source="slow", object_id=object_id)["document_id"]) == 1
        assert ws.index().replaced == 0  # nothing left pending: the index is the second's
        last = ws.last_runs()["slow"]
        assert isinstance(last, RunReport) and last.status == "succeeded"


def test_a_heartbeat_keeps_the_lease_through_a_long_enumeration(
    tmp_path: Path, manifest_url: str
) -> None:
    config = _slow_config(tmp_path, manifest_url, count=5, enumerate_seconds=3 * LEASE)
    markers = tmp_path / "markers"
    process = _spawn(config, "--no-index")
    manifest = Manifest.open(manifest_url)
    refused = 0
    try:
        _wait_for(lambda: (markers / "enumerating").exists(), "the enumeration to start")
        started = time.monotonic()
        while not (markers / "enumerated").exists():
            with pytest.raises(FatalError, match="is being synced by"):
                manifest.runs.leases.acquire("slow", "another-host:1", LEASE)
            refused += 1
            time.sleep(0.25)
        assert time.monotonic() - started > 2 * LEASE  # the listing outlived the lease
        assert refused >= 8
        stdout, stderr = process.communicate(timeout=120)
        assert process.returncode == 0, stderr
        assert '["succeeded"]' in stdout
        run = manifest.runs.latest("slow")
        assert run is not None and run.attempts == 1
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
        manifest.close()


def test_lease_seconds_is_configurable_and_reaches_the_lease(tmp_path: Path) -> None:
    from lease_driver import SlowConnector

    config = _slow_config(tmp_path, f"sqlite:///{tmp_path / 'state' / 'm.db'}", 2, 0)
    with Workspace.open(config, connector_types={"slow": SlowConnector}) as ws:
        assert ws.config.sync.lease_seconds == LEASE
        ws.sync(index=False)
        lease = ws.manifest.runs.leases.acquire("slow", "host-z:9", 7)
        assert isinstance(lease, Lease) and lease.seconds == 7 and lease.epoch == 2
