"""``headwater run`` with the Celery executor decides and enqueues; it never runs a sync
itself, and never enqueues a source that is already queued (real Redis, no worker)."""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import redis

from headwater import Workspace
from headwater.executor.observe import executor_status
from headwater.scheduler.daemon import Scheduler
from workspace_helpers import filesystem_source, write_config


def test_the_scheduler_only_enqueues_and_never_twice(
    tmp_path: Path, pg_database: str, corpus: Path, caplog: pytest.LogCaptureFixture
) -> None:
    prefix = uuid.uuid4().hex[:10]
    executor = (
        '[executor]\ntype = "celery"\nbroker_url = "redis://127.0.0.1:6379/7"\n'
        f'queues = {{ sync = "{prefix}.sync", index = "{prefix}.index" }}\n'
    )
    sources = filesystem_source(corpus, "docs") + filesystem_source(corpus, "more")
    config = write_config(tmp_path, manifest_url=pg_database, sources=sources, extra=executor)
    client = redis.Redis.from_url("redis://127.0.0.1:6379/7")
    try:
        caplog.set_level(logging.INFO, logger="headwater.scheduler")
        for _ in range(2):
            assert Scheduler(config, once=True).serve() == 0
        # the operator's log says what was enqueued, once per message actually sent
        enqueued = [r.getMessage() for r in caplog.records if r.msg.startswith("enqueued")]
        assert sorted(m.split(" (")[0] for m in enqueued) == [
            "enqueued sync of docs",
            "enqueued sync of more",
        ]
        with Workspace.open(config) as ws:
            status = executor_status(ws.runtime)
            assert ws.status()["executor"]["queued"] == status["queued"]
            assert sorted(status["queued"]) == ["docs", "more"]
            assert status["queues"] == {f"{prefix}.sync": 2, f"{prefix}.index": 0}
            assert ws.manifest.runs.latest("docs") is None  # nothing ran in this process
    finally:
        client.delete(f"{prefix}.sync", f"{prefix}.index")


def test_a_sync_waiting_on_no_worker_says_so(
    tmp_path: Path, pg_database: str, corpus: Path
) -> None:
    """With no worker consuming the sync queue, `headwater sync` waits; after a while it
    says what it waits for and how to check, instead of hanging without a word. Ctrl-C
    stops the wait (130)."""
    prefix = uuid.uuid4().hex[:10]
    executor = (
        '[executor]\ntype = "celery"\nbroker_url = "redis://127.0.0.1:6379/7"\n'
        f'queues = {{ sync = "{prefix}.sync", index = "{prefix}.index" }}\n'
    )
    sources = filesystem_source(corpus, "docs", access="{ public = true }")
    config = write_config(tmp_path, manifest_url=pg_database, sources=sources, extra=executor)
    client = redis.Redis.from_url("redis://127.0.0.1:6379/7")
    log = tmp_path / "stderr.txt"
    try:
        with log.open("w") as stderr:
            proc = subprocess.Popen(
                [sys.executable, "-m", "headwater", "-c", str(config), "sync", "--json"],
                stdout=subprocess.DEVNULL, stderr=stderr, text=True,
            )  # fmt: skip
            try:
                deadline = time.monotonic() + 60
                while "still waiting" not in log.read_text() and time.monotonic() < deadline:
                    time.sleep(0.5)
                proc.send_signal(signal.SIGINT)
                proc.wait(timeout=60)
            finally:
                proc.kill()
        text = log.read_text()
        assert "still waiting for task" in text and "headwater workers" in text, text
        assert proc.returncode == 130, text
    finally:
        client.delete(f"{prefix}.sync", f"{prefix}.index")
