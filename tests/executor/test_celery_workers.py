"""Celery workers against real brokers, a real PostgreSQL manifest and real processes.

Three ``headwater worker`` processes sync three sources (filesystem, git, web) and
index them; the manifest and the index equal a local-executor sync of the same sources.
A worker SIGKILLed inside a sync task or an index task (a failpoint makes the kill
deterministic) loses nothing: the task is redelivered, the run resumes from its
checkpoint or the documents are re-claimed, and the result still equals a clean sync.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from deployment import BROKERS, Deployment, build_sources, snapshot
from httpserver import LocalHttpServer

from headwater import Workspace
from headwater.executor.dispatch import enqueue_sync, wait_for


@pytest.fixture(params=sorted(BROKERS))
def deployment(
    request: pytest.FixtureRequest, tmp_path: Path, pg_database: str
) -> Iterator[Deployment]:
    with LocalHttpServer() as server:
        sources = build_sources(tmp_path, server)
        dep = Deployment(tmp_path, pg_database, BROKERS[request.param], sources)
        try:
            yield dep
        finally:
            dep.stop()


def local_reference(dep: Deployment) -> dict[str, object]:
    with Workspace.open(dep.local_config, embedder=None) as ws:
        result = ws.sync()
        assert [r.status for r in result.runs] == ["succeeded"] * 3
        return snapshot(ws)


def assert_equal_to_local(dep: Deployment) -> None:
    with Workspace.open(dep.config) as ws:
        scaled = snapshot(ws)
        assert (
            ws.manifest.index_state.pending_count("main", ws.indexes.version(ws.index_sections[0]))
            == 0
        )
    reference = local_reference(dep)
    assert scaled == reference, dep.logs()


def test_three_workers_sync_three_sources_like_a_local_sync(deployment: Deployment) -> None:
    for _ in range(3):
        deployment.start_worker()
    with Workspace.open(deployment.config) as ws:
        result = ws.sync()
        assert sorted(r.source for r in result.runs) == ["files", "repo", "site"], deployment.logs()
        assert {r.status for r in result.runs} == {"succeeded"}
        assert result.index.replaced == 12 + 4 + 9
        # The workers that ran tasks beat (the admin page's liveness line).
        workers = [b for b in ws.manifest.liveness.alive() if b.role == "worker"]
        assert 1 <= len(workers) <= 3, workers
    assert_equal_to_local(deployment)


@pytest.mark.slow
def test_a_worker_killed_in_a_sync_task_is_redelivered_and_resumes(deployment: Deployment) -> None:
    doomed = deployment.start_worker(failpoints="after_manifest_commit")
    with Workspace.open(deployment.config) as ws:
        (queued,) = enqueue_sync(ws.runtime, ["files"])
        assert deployment.wait_dead(doomed) == -signal.SIGKILL
        interrupted = ws.manifest.runs.interrupted("files")
        assert interrupted is not None  # the run died after its first batch commit
        assert ws.manifest.count_documents("files", "active") == 4
        deployment.start_worker()
        deployment.start_worker()
        value = wait_for(ws.runtime, queued.task_id)
        record = ws.manifest.runs.get(value["run_id"])
        assert record is not None and record.run_id == interrupted.run_id  # the same run, resumed
        assert record.status == "succeeded" and record.attempts == 2
        assert record.counts.new + record.counts.unchanged == 12
        for task in value["index_tasks"]:
            wait_for(ws.runtime, task)
        ws.sync(["repo", "site"])
    assert_equal_to_local(deployment)


@pytest.mark.slow
def test_a_worker_killed_in_an_index_task_is_redelivered_and_reclaims(
    deployment: Deployment,
) -> None:
    deployment.start_worker(queues="sync")
    doomed = deployment.start_worker(queues="index", failpoints="after_sink_write_before_record")
    with Workspace.open(deployment.config) as ws:
        (queued,) = enqueue_sync(ws.runtime, ["files"])
        value = wait_for(ws.runtime, queued.task_id)
        assert value["status"] == "succeeded" and value["index_tasks"]
        assert deployment.wait_dead(doomed) == -signal.SIGKILL
        deployment.start_worker(queues="index")
        for task in value["index_tasks"]:
            wait_for(ws.runtime, task)
        ws.sync(["repo", "site"])
    assert_equal_to_local(deployment)
