"""The NATS executor against the real JetStream at 127.0.0.1:4222, a real PostgreSQL
manifest and real ``headwater worker`` processes (each test its own stream).

A run published by ``sync`` is consumed by two workers and syncs a folder with exact
counts; a run three times longer than ``ack_wait`` is delivered once (``InProgress``);
the scheduler's startup reconcile republishes a due run whose message was lost, and
publishes nothing twice. Failures and kills: ``test_nats_failures.py``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from nats_deployment import (
    NatsDeployment,
    corpus,
    filesystem,
    latest_status,
    publish,
    wait_until,
)

from headwater import Workspace
from headwater.executor.nats_dispatch import open_queue
from headwater.executor.nats_queue import FIRST, RunMessage
from headwater.executor.observe import live_workers, queue_depths
from headwater.manifest.runs import SUCCEEDED
from headwater.scheduler.daemon import Scheduler


@pytest.fixture
def deployment(tmp_path: Path, pg_database: str) -> Iterator[NatsDeployment]:
    dep = NatsDeployment(tmp_path, pg_database, filesystem("files", corpus(tmp_path / "files")))
    try:
        yield dep
    finally:
        dep.stop()


def test_a_published_run_is_consumed_by_a_worker_with_exact_counts(
    deployment: NatsDeployment,
) -> None:
    deployment.start_worker()
    deployment.start_worker()
    with Workspace.open(deployment.config) as ws:
        result = ws.sync(["files"])
        (run,) = result.runs
        assert run.status == SUCCEEDED, deployment.logs()
        assert (run.counts.seen, run.counts.new, run.counts.changed) == (12, 12, 0)
        version = ws.indexes.version(ws.index_sections[0])
        assert ws.manifest.index_state.pending_count("main", version) == 0
        assert len({row.document_id for row in ws.sink("main").inventory()}) == 12
        assert deployment.messages() == 0  # acked: the work queue is empty
        wait_until(lambda: len(live_workers(ws.runtime)) == 2, what="both workers' heartbeats")
        assert queue_depths(ws.runtime) == {deployment.stream: 0}
        executor = ws.status().executor.as_dict()
        assert (executor["type"], executor["queues"], executor["queued"]) == (
            "nats", {deployment.stream: 0}, {},
        )  # fmt: skip
        (deployment.tmp / "files" / "note03.md").write_text("# Note 3\n\nrewritten.\n")
        (deployment.tmp / "files" / "extra.md").write_text("# Extra\n\nnew one.\n")
        (again,) = ws.sync(["files"]).runs
        assert again.run_id != run.run_id and again.status == SUCCEEDED
        c = again.counts
        assert (c.seen, c.new, c.changed, c.unchanged) == (13, 1, 1, 11), deployment.logs()
        assert len({row.document_id for row in ws.sink("main").inventory()}) == 13
        assert ws.manifest.index_state.pending_count("main", version) == 0
    consumer = deployment.consumer()
    assert (consumer.delivered, consumer.pending, consumer.ack_pending) == (2, 0, 0)


def test_the_startup_reconcile_republishes_a_lost_due_run_and_nothing_twice(
    tmp_path: Path, pg_database: str, caplog: pytest.LogCaptureFixture
) -> None:
    sources = filesystem("files", corpus(tmp_path / "files")) + filesystem(
        "more", corpus(tmp_path / "more", docs=3)
    )
    dep = NatsDeployment(tmp_path, pg_database, sources)
    try:
        with Workspace.open(dep.config) as ws:
            publish(ws, "files", "more")  # stream sequences 1 and 2
            dep.delete_message(1)  # the message of "files" is lost
            with open_queue(ws.runtime) as queue:
                assert queue.waiting() == {"more": 1}
            with caplog.at_level(logging.INFO, logger="headwater"):
                assert Scheduler(dep.config, once=True).serve() == 0
            assert "2 due, 1 carried by a message, 0 running, published for files" in caplog.text
            with open_queue(ws.runtime) as queue:
                assert queue.waiting() == {"files": 1, "more": 1}  # "more" not twice
            assert dict(ws.status().executor.queued) == {"files": "nats", "more": "nats"}
            dep.start_worker(slots=2)  # one process, two runs at once
            for source, docs in (("files", 12), ("more", 3)):
                wait_until(lambda s=source: latest_status(ws, s) == SUCCEEDED, what=source)  # type: ignore[misc]
                assert ws.manifest.count_documents(source, "active") == docs
            wait_until(lambda: dep.messages() == 0, what="the acks")
            # The extra copy of a run already done (both copies existed): acked, not run.
            with open_queue(ws.runtime) as queue:
                assert queue.publish(RunMessage("files", FIRST, "test"), msg_id="a-copy")
            wait_until(lambda: dep.messages() == 0, what="the copy's ack")
            assert len(ws.manifest.runs.recent("files")) == 1
            assert "followed run first already" in dep.logs()
            assert "with 2 slot(s)" in dep.logs()
    finally:
        dep.stop()


def test_a_run_longer_than_ack_wait_is_not_redelivered_while_its_worker_lives(
    tmp_path: Path, pg_database: str
) -> None:
    sources = filesystem("files", corpus(tmp_path / "files"))
    dep = NatsDeployment(tmp_path, pg_database, sources)  # ack_wait = 2 s
    try:
        for _ in range(2):  # one runs (3 batches, 2 s each), the other would get a redelivery
            dep.start_worker(failpoints="after_checkpoint_save:sleep2")
        with Workspace.open(dep.config) as ws:
            publish(ws, "files", index=False)
            wait_until(lambda: latest_status(ws, "files") == SUCCEEDED, what="the long run")
            (record,) = ws.manifest.runs.recent("files")
            assert record.duration_s > 3 * 2  # three ack_waits
            assert record.attempts == 1 and record.counts.new == 12
            wait_until(lambda: dep.messages() == 0, what="the ack")
        assert dep.consumer().delivered == 1, dep.logs()  # InProgress kept it with its worker
    finally:
        dep.stop()
