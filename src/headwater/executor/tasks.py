"""Headwater's two Celery tasks: run one source, and index claimed pending documents.

Each worker process opens the runtime once (after the fork) and keeps it. A task
that raises, or whose run ends ``failed`` (the connector raised, the folder is gone),
is retried with backoff up to ``[executor] max_retries``; after that its failure
is recorded in the manifest's failures table (stage ``task:sync`` or ``task:index``,
dead at once) and the task ends, so a poisoned task never retries
forever. A sync task that meets a live lease (the source is running elsewhere) waits
for it by retrying, without counting that as a failure.
"""

from __future__ import annotations

import hashlib
import logging
import os
from dataclasses import asdict
from typing import Any

from celery import Celery, Task

from headwater.errors import FatalError, LeaseLost, error_class_of
from headwater.executor.work import index_claimed, sync_one
from headwater.manifest.liveness import WORKER, Heartbeat
from headwater.manifest.owners import lease_owner
from headwater.manifest.queued import QueueMarkers
from headwater.manifest.records import FailureWrite
from headwater.runtime import Runtime

log = logging.getLogger(__name__)

SYNC_TASK = "headwater.sync_source"
INDEX_TASK = "headwater.index_pending"
_open: dict[int, Runtime] = {}


def worker_runtime(config_path: str) -> Runtime:
    """This process's runtime (opened on first use, after any fork)."""
    pid = os.getpid()
    rt = _open.get(pid)
    if rt is None:
        _open.clear()  # a forked child must not reuse its parent's connections
        rt = _open[pid] = Runtime.open(config_path)
        # The admin page's liveness line: this worker beats while its process lives.
        Heartbeat(lambda: rt.manifest.engine, lease_owner(), WORKER).start()
    return rt


def _lease_busy(exc: BaseException) -> bool:
    return isinstance(exc, LeaseLost) or (
        isinstance(exc, FatalError) and "is being synced by" in str(exc)
    )


def dead_letter(rt: Runtime, stage: str, subject: str, exc: BaseException, attempts: int) -> None:
    """Record a task that used up its retries as a dead failure (the DLQ)."""
    key = _key(stage, subject)
    rt.manifest.failures.record(
        [
            FailureWrite(
                source_id=subject if stage == "task:sync" else "*",
                object_id=f"{stage}:{subject}",
                document_id=key,
                locator=f"celery {stage} task for {subject} ({attempts} attempts)",
                stage=stage,
                error_class=error_class_of(exc),
                message=str(exc) or type(exc).__name__,
                pipeline_version=rt.pipeline_version,
                source_version=None,
                fetch_ref=None,
                permanent=True,
            )
        ]
    )


def register_tasks(app: Celery) -> None:
    """Register the sync and index tasks on ``app``."""
    config_path = str(app.conf.headwater_config)

    def enqueue_index(count: int) -> list[str]:
        return [app.send_task(INDEX_TASK).id for _ in range(count)]

    @app.task(name=SYNC_TASK, bind=True, acks_late=True, reject_on_worker_lost=True)  # type: ignore[untyped-decorator]
    def sync_source(
        self: Task[Any, Any], source_id: str, force: bool = False, index: bool = True
    ) -> dict[str, Any]:
        rt = worker_runtime(config_path)
        max_retries = rt.config.executor.max_retries
        task_id = str(self.request.id)
        failed_run: str | None = None
        try:
            outcome = sync_one(rt, source_id, force=force)
            if outcome.run is not None and outcome.run.status == "failed":
                failed_run = outcome.run.run_id
                raise FatalError(
                    f"run {failed_run} of source {source_id!r} failed: {outcome.run.error}"
                )
        except Exception as exc:
            if _lease_busy(exc):
                log.info("%s is running elsewhere; task %s waits for it", source_id, task_id)
                raise self.retry(countdown=2, max_retries=None) from exc
            if self.request.retries < max_retries:
                raise self.retry(exc=exc, countdown=2**self.request.retries) from exc
            dead_letter(rt, "task:sync", source_id, exc, self.request.retries + 1)
            QueueMarkers(rt.manifest.engine).clear(source_id, task_id)
            return {
                "source_id": source_id,
                "run_id": failed_run,
                "status": "dead",
                "index_tasks": [],
            }
        QueueMarkers(rt.manifest.engine).clear(source_id, task_id)
        rt.manifest.failures.resolve([_key("task:sync", source_id)], ("task:sync",))
        run = outcome.run
        tasks = enqueue_index(outcome.index_tasks_needed) if index else []
        return {
            "source_id": source_id,
            "run_id": run.run_id if run else None,
            "status": run.status if run else "cancelled",
            "index_tasks": tasks,
        }

    @app.task(name=INDEX_TASK, bind=True, acks_late=True, reject_on_worker_lost=True)  # type: ignore[untyped-decorator]
    def index_pending(self: Task[Any, Any]) -> dict[str, Any]:
        rt = worker_runtime(config_path)
        task_id = str(self.request.id)
        try:
            report = index_claimed(rt, owner=task_id)
        except Exception as exc:
            if self.request.retries < rt.config.executor.max_retries:
                raise self.retry(exc=exc, countdown=2**self.request.retries) from exc
            dead_letter(rt, "task:index", task_id, exc, self.request.retries + 1)
            return {"status": "dead", "report": None}
        return {"status": "ok", "report": asdict(report)}


def _key(stage: str, subject: str) -> str:
    return hashlib.sha256(f"{stage}:{subject}".encode()).hexdigest()
