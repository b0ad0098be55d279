"""The NATS executor's failure paths on the real JetStream, a real PostgreSQL manifest and
real ``headwater worker`` processes (each test its own stream).

A worker frozen mid-run by a failpoint and SIGKILLed is redelivered after ``ack_wait``
and another worker resumes the same run from its checkpoint; a retryable failure is
nak'ed and the redelivery runs; ``max_deliver`` failures record the run as failed with
the reason, and the message is acked.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from nats_deployment import (
    NatsDeployment,
    corpus,
    filesystem,
    latest_status,
    publish,
    stopped,
    wait_until,
)

from headwater import Workspace
from headwater.manifest.runs import FAILED, RUNNING, SUCCEEDED


@pytest.fixture
def deployment(tmp_path: Path, pg_database: str) -> Iterator[NatsDeployment]:
    dep = NatsDeployment(tmp_path, pg_database, filesystem("files", corpus(tmp_path / "files")))
    try:
        yield dep
    finally:
        dep.stop()


def test_a_worker_killed_mid_run_is_redelivered_and_another_resumes_it(
    deployment: NatsDeployment,
) -> None:
    doomed = deployment.start_worker(failpoints="after_checkpoint_save:stop")
    with Workspace.open(deployment.config) as ws:
        publish(ws, "files")
        wait_until(lambda: stopped(doomed), what="the worker to freeze after its first batch")
        interrupted = ws.manifest.runs.interrupted("files")
        assert interrupted is not None and interrupted.status == RUNNING
        assert ws.manifest.count_documents("files", "active") == 4  # one batch committed
        doomed.kill()
        assert doomed.wait(timeout=10) == -signal.SIGKILL
        deployment.start_worker()
        wait_until(lambda: latest_status(ws, "files") == SUCCEEDED, what="the resumed run")
        record = ws.manifest.runs.latest("files")
        assert record is not None and record.run_id == interrupted.run_id, deployment.logs()
        assert record.attempts == 2  # the same run, resumed from its checkpoint
        assert record.counts.new == 12 and record.counts.seen == 12
        assert ws.manifest.count_documents("files", "active") == 12
        wait_until(lambda: deployment.messages() == 0, what="the ack")
    consumer = deployment.consumer()
    assert consumer.delivered == 2 and consumer.ack_pending == 0  # one redelivery


def test_a_retryable_failure_is_naked_and_the_redelivery_runs(
    deployment: NatsDeployment,
) -> None:
    deployment.start_worker(failpoints="before_queued_run:transient1")
    with Workspace.open(deployment.config) as ws:
        publish(ws, "files")
        wait_until(lambda: latest_status(ws, "files") == SUCCEEDED, what="the retried run")
        assert len(ws.manifest.runs.recent("files")) == 1  # nothing recorded for the nak
        wait_until(lambda: deployment.messages() == 0, what="the ack")
    assert "nak'ed (again in 1.0 s): retryable failure of files" in deployment.logs()
    assert deployment.consumer().delivered == 2


def test_max_deliver_failures_record_the_run_as_failed_with_the_reason(
    tmp_path: Path, pg_database: str
) -> None:
    sources = filesystem("files", corpus(tmp_path / "files"))
    dep = NatsDeployment(tmp_path, pg_database, sources, extra="max_deliver = 3\n")
    try:
        dep.start_worker(failpoints="before_queued_run:transient")
        with Workspace.open(dep.config) as ws:
            publish(ws, "files")
            wait_until(lambda: latest_status(ws, "files") == FAILED, what="the failed run")
            (record,) = ws.manifest.runs.recent("files")
            assert record.error is not None
            assert "TransientError: failpoint before_queued_run (attempt 3)" in record.error
            assert "gave up after 3 deliveries" in record.error
            assert ws.manifest.count_documents("files", "active") == 0
            wait_until(lambda: dep.messages() == 0, what="the ack")
        assert dep.consumer().delivered == 3
    finally:
        dep.stop()
