"""Headwater's two Celery tasks: run one source, and index claimed pending documents.

Each worker process opens the workspace once (after the fork) and keeps it. A task
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
from headwater.manifest.records import FailureWrite
from headwater.workspace import Workspace

log = logging.getLogger(__name__)

_open: dict[int, Workspace] = {}


def worker_workspace(config_path: str) -> Workspace:
    """This process's workspace (opened on first use, after any fork)."""
    pid = os.getpid()
    ws = _open.get(pid)
    if ws is None:
        _open.clear()  # a forked child must not reuse its parent's connections
        ws = _open[pid] = Workspace.open(config_path)
    return ws


def _lease_busy(exc: BaseException) -> bool:
    return isinstance(exc, LeaseLost) or (
        isinstance(exc, FatalError) and "is being synced by" in str(exc)
    )


def dead_letter(ws: Workspace, stage: str, subject: str, exc: BaseException, attempts: int) -> None:
    """Record a task that used up its retries as a dead failure (the DLQ)."""
    key = _key(stage, subject)
    ws.manifest.failures.record(
        [
            FailureWrite(
                source_id=subject if stage == "task:sync" else "*",
                object_id=f"{stage}:{subject}",
                document_id=key,
                locator=f"celery {stage} task for {subject} ({attempts} attempts)",
                stage=stage,
                error_class=error_class_of(exc),
                message=str(exc) or type(exc).__name__,
                pipeline_version=ws.pipeline_version,
                source_version=None,
                fetch_ref=None,
                permanent=True,
            )
        ]
    )


def register_tasks(app: Celery) -> None:
    from headwater.executor.celery_app import INDEX_TASK, SYNC_TASK
    from headwater.executor.queued import QueueMarkers
    from headwater.executor.work import index_claimed, sync_one

    config_path = str(app.conf.headwater_config)

    def enqueue_index(count: int) -> list[str]:
        return [app.send_task(INDEX_TASK).id for _ in range(count)]

    @app.task(name=SYNC_TASK, bind=True, acks_late=True, reject_on_worker_lost=True)  # type: ignore[untyped-decorator]
    def sync_source(
        self: Task[Any, Any], source_id: str, force: bool = False, index: bool = True
    ) -> dict[str, Any]:
        ws = worker_workspace(config_path)
        max_retries = ws.config.executor.max_retries
        task_id = str(self.request.id)
        failed_run: str | None = None
        try:
            outcome = sync_one(ws, source_id, force=force)
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
            dead_letter(ws, "task:sync", source_id, exc, self.request.retries + 1)
            QueueMarkers(ws.manifest.engine).clear(source_id, task_id)
            return {
                "source_id": source_id,
                "run_id": failed_run,
                "status": "dead",
                "index_tasks": [],
            }
        QueueMarkers(ws.manifest.engine).clear(source_id, task_id)
        ws.manifest.failures.resolve([_key("task:sync", source_id)], ("task:sync",))
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
        ws = worker_workspace(config_path)
        task_id = str(self.request.id)
        try:
            report = index_claimed(ws, owner=task_id)
        except Exception as exc:
            if self.request.retries < ws.config.executor.max_retries:
                raise self.retry(exc=exc, countdown=2**self.request.retries) from exc
            dead_letter(ws, "task:index", task_id, exc, self.request.retries + 1)
            return {"status": "dead", "report": None}
        return {"status": "ok", "report": asdict(report)}


def _key(stage: str, subject: str) -> str:
    return hashlib.sha256(f"{stage}:{subject}".encode()).hexdigest()
