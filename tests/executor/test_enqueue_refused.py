"""An enqueue happens or leaves nothing behind (real brokers, a real PostgreSQL manifest).

A broker that refuses the message (here: a closed port on this machine) leaves no queued
marker: the error names the broker (password masked) and what to do, ``headwater sync``
exits 1 at once instead of waiting, and the scheduler logs it and goes on. A marker left
by an enqueuer that died between marker and message holds for ``ENQUEUE_GRACE_S`` only,
and a ``headwater sync`` waiting on a task that never reached the broker enqueues the
source again and completes.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
import redis
from deployment import ROOT
from sqlalchemy import select

from headwater import Workspace
from headwater.clock import as_utc
from headwater.errors import BrokerUnavailable
from headwater.executor.dispatch import enqueue_sync
from headwater.manifest import schema as t
from headwater.manifest.queued import ENQUEUE_GRACE_S, QueueMarkers
from headwater.scheduler.daemon import Scheduler
from workspace_helpers import filesystem_source, write_config

PASSWORD = "s3cret-pw"


def closed_port() -> int:
    """A port nothing listens on: bound, then released (connections to it are refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def refusing_broker(kind: str) -> str:
    port = closed_port()
    if kind == "redis":
        return f"redis://:{PASSWORD}@127.0.0.1:{port}/7"
    return f"amqp://guest:{PASSWORD}@127.0.0.1:{port}//"


def celery_config(tmp_path: Path, manifest: str, corpus: Path, broker: str) -> Path:
    prefix = uuid.uuid4().hex[:10]
    executor = (
        f'[executor]\ntype = "celery"\nbroker_url = "{broker}"\nvisibility_timeout = 600\n'
        f'queues = {{ sync = "{prefix}.sync", index = "{prefix}.index" }}\n'
    )
    sources = filesystem_source(corpus, "docs", access="{ public = true }")
    return write_config(tmp_path, manifest_url=manifest, sources=sources, extra=executor)


def marker_row(ws: Workspace, source_id: str) -> tuple[str, timedelta] | None:
    q = t.run_queue
    with ws.manifest.engine.connect() as conn:
        row = conn.execute(
            select(q.c.task_id, q.c.queued_at, q.c.expires_at).where(q.c.source_id == source_id)
        ).first()
    return None if row is None else (str(row[0]), as_utc(row[2]) - as_utc(row[1]))


@pytest.mark.parametrize("kind", ["redis", "amqp"])
def test_a_refused_enqueue_leaves_no_marker_and_names_the_broker(
    tmp_path: Path, pg_database: str, corpus: Path, kind: str
) -> None:
    broker = refusing_broker(kind)
    config = celery_config(tmp_path, pg_database, corpus, broker)
    with Workspace.open(config) as ws:
        with pytest.raises(BrokerUnavailable) as caught:
            enqueue_sync(ws.runtime, ["docs"])
        message = str(caught.value)
        assert broker.replace(PASSWORD, "***") in message and PASSWORD not in message
        assert "[executor] broker_url" in message and "headwater sync" in message
        assert marker_row(ws, "docs") is None
        assert QueueMarkers(ws.manifest.engine).holder("docs") is None
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, "-m", "headwater", "-c", str(config), "sync"],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "refused the sync task of source 'docs'" in done.stderr, done.stderr
    assert "bug" not in done.stderr and PASSWORD not in done.stderr, done.stderr
    with Workspace.open(config) as ws:
        assert marker_row(ws, "docs") is None  # a second try left nothing either


def test_the_scheduler_logs_a_refused_enqueue_and_leaves_the_source_due(
    tmp_path: Path, pg_database: str, corpus: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = celery_config(tmp_path, pg_database, corpus, refusing_broker("redis"))
    caplog.set_level(logging.INFO, logger="headwater.scheduler")
    assert Scheduler(config, once=True).serve() == 1
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert any("refused the sync task of source 'docs'" in m for m in errors), errors
    assert all(PASSWORD not in m for m in errors), errors
    with Workspace.open(config) as ws:
        assert marker_row(ws, "docs") is None


def test_a_marker_holds_briefly_until_the_broker_took_the_message(
    tmp_path: Path, pg_database: str, corpus: Path
) -> None:
    prefix_config = celery_config(tmp_path, pg_database, corpus, "redis://127.0.0.1:6379/7")
    client = redis.Redis.from_url("redis://127.0.0.1:6379/7")
    with Workspace.open(prefix_config) as ws:
        queues = ws.config.executor.queues
        try:
            markers = QueueMarkers(ws.manifest.engine)
            assert markers.take("docs", "enqueuer-died-here") is None  # then SIGKILL
            assert marker_row(ws, "docs") == (
                "enqueuer-died-here",
                timedelta(seconds=ENQUEUE_GRACE_S),
            )
            markers.clear("docs", "enqueuer-died-here")
            (queued,) = enqueue_sync(ws.runtime, ["docs"])
            row = marker_row(ws, "docs")
            assert row is not None and row[0] == queued.task_id
            assert row[1] >= timedelta(seconds=600)  # confirmed: the visibility timeout
        finally:
            client.delete(queues.sync, queues.index)


def test_a_sync_waiting_on_a_task_that_never_reached_the_broker_enqueues_it_again(
    tmp_path: Path, pg_database: str, corpus: Path
) -> None:
    """Another enqueuer took the marker, then its publish failed (it clears the marker)
    while this ``headwater sync`` waited on its task: the waiter enqueues the source
    itself and completes, instead of waiting for good on a task no broker holds."""
    config = celery_config(tmp_path, pg_database, corpus, "redis://127.0.0.1:6379/7")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    client = redis.Redis.from_url("redis://127.0.0.1:6379/7")
    with Workspace.open(config) as ws:
        queues = ws.config.executor.queues
        markers = QueueMarkers(ws.manifest.engine)
        assert markers.take("docs", "never-sent", 600) is None  # the other enqueuer
    worker_log = (tmp_path / "worker.log").open("wb")
    worker = subprocess.Popen(
        [sys.executable, "-m", "headwater", "-c", str(config), "worker", "--pool", "solo",
         "--queues", "sync,index", "--hostname", f"w-{uuid.uuid4().hex[:8]}@%h",
         "--loglevel", "WARNING"],
        env=env, stdout=worker_log, stderr=subprocess.STDOUT, cwd=tmp_path,
    )  # fmt: skip
    stderr = tmp_path / "sync.stderr"
    try:
        with stderr.open("w") as err:
            sync = subprocess.Popen(
                [sys.executable, "-m", "headwater", "-c", str(config), "sync"],
                stdout=subprocess.DEVNULL, stderr=err, text=True, env=env,
            )  # fmt: skip
            try:
                deadline = time.monotonic() + 120
                while "still waiting for task never-sent" not in stderr.read_text():
                    assert sync.poll() is None, stderr.read_text()
                    assert time.monotonic() < deadline, stderr.read_text()
                    time.sleep(0.2)
                markers.clear("docs", "never-sent")  # its publish failed
                assert sync.wait(timeout=180) == 0, stderr.read_text()
            finally:
                if sync.poll() is None:
                    sync.kill()
                    sync.wait()
        text = " ".join(stderr.read_text().split())
        assert "task never-sent of source docs never reached the broker" in text, text
        with Workspace.open(config) as ws:
            latest = ws.manifest.runs.latest("docs")
            assert latest is not None and latest.status == "succeeded"
            assert ws.search("vacation", groups=["staff"])
            assert marker_row(ws, "docs") is None
    finally:
        worker.terminate()
        worker.wait(timeout=30)
        worker_log.close()
        client.delete(queues.sync, queues.index)
