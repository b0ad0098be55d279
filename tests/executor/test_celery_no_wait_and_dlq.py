"""``sync --no-wait`` and the dead-letter path, on Redis with real processes.

With no worker running, ``headwater sync --no-wait --json`` prints one task id per
source and exits 0; ``status`` then shows those messages waiting in the sync queue.
With the local executor ``--no-wait`` is a usage error (exit 2). A source whose run
keeps failing (its folder is gone) is retried ``max_retries`` times by a real worker
and then ends as one dead failure record of stage ``task:sync``, not a retry loop.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from deployment import BROKERS, ROOT, Deployment, build_sources
from httpserver import LocalHttpServer

from headwater import Workspace
from headwater.executor.dispatch import enqueue_sync, wait_for


@pytest.fixture
def deployment(tmp_path: Path, pg_database: str) -> Iterator[Deployment]:
    with LocalHttpServer() as server:
        dep = Deployment(tmp_path, pg_database, BROKERS["redis"], build_sources(tmp_path, server))
        try:
            yield dep
        finally:
            dep.stop()
            with Workspace.open(dep.config) as ws:  # leave no messages in the Redis db
                from headwater.executor.dispatch import app_for

                app_for(ws.runtime).control.purge()


def headwater(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(
        [sys.executable, "-m", "headwater", "-c", str(config), *args],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_no_wait_prints_task_ids_that_wait_in_the_queue(deployment: Deployment) -> None:
    done = headwater(deployment.config, "sync", "--no-wait", "--json", "files", "site")
    assert done.returncode == 0, done.stderr
    queued = json.loads(done.stdout)["queued"]
    assert [q["source"] for q in queued] == ["files", "site"]
    assert all(q["task_id"] and not q["already_queued"] for q in queued)
    status = headwater(deployment.config, "status", "--json")
    assert status.returncode == 0, status.stderr
    executor = json.loads(status.stdout)["executor"]
    assert executor["queues"][f"{deployment.prefix}.sync"] == 2
    assert executor["queued"] == {q["source"]: q["task_id"] for q in queued}
    again = headwater(deployment.config, "sync", "--no-wait", "files")
    assert again.returncode == 0, again.stderr
    assert queued[0]["task_id"] in again.stdout and "already queued" in again.stdout
    for flag in ("--full", "--permissions"):
        refused = headwater(deployment.config, "sync", "--no-wait", flag, "repo")
        assert refused.returncode == 2 and f"does not enqueue {flag} runs" in refused.stderr


def test_no_wait_full_points_to_where_a_full_sync_runs(deployment: Deployment) -> None:
    """`sync --full` is not dispatched to workers, so the advice for `--no-wait --full`
    must not be plain `sync --full` under Celery, which is refused too."""
    refused = headwater(deployment.config, "sync", "--no-wait", "--full", "repo")
    assert refused.returncode == 2
    assert 'type = "local"' in refused.stderr
    plain = headwater(deployment.config, "sync", "--full", "repo")
    assert plain.returncode == 2 and 'type = "local"' in plain.stderr


def test_no_wait_with_the_local_executor_is_a_usage_error(deployment: Deployment) -> None:
    done = headwater(deployment.local_config, "sync", "--no-wait")
    assert done.returncode == 2
    assert "--no-wait needs the celery executor" in done.stderr


def test_a_source_that_keeps_failing_ends_in_the_dlq(deployment: Deployment) -> None:
    root = deployment.tmp / "corpus"
    for path in root.iterdir():
        path.unlink()
    root.rmdir()  # every run of "files" now fails: its folder is gone
    deployment.start_worker()
    with Workspace.open(deployment.config) as ws:
        (queued,) = enqueue_sync(ws.runtime, ["files"], index=False)
        value = wait_for(ws.runtime, queued.task_id)
        assert value["status"] == "dead", deployment.logs()
        dead = [f for f in ws.manifest.failures.list(source_id="files") if f.stage == "task:sync"]
        assert len(dead) == 1, dead
        assert dead[0].permanent and "does not exist" in dead[0].message
        assert "(2 attempts)" in dead[0].locator  # max_retries = 1: one try, one retry
        runs = ws.manifest.runs.recent("files")
        assert [r.status for r in runs] == ["failed", "failed"]
        assert ws.status().as_dict()["executor"]["queued"] == {}
