"""The client side of the Celery executor: enqueue runs and index tasks, and wait.

``headwater sync``, ``headwater index`` and the scheduler call these when
``[executor] type = "celery"``. A source is enqueued only after its queued marker was
taken (see ``queued.py``); one already queued or running is not enqueued again, and a
waiting caller waits on the task that holds it. Waiting reads task results from the
result backend and run reports from the manifest, so the reports equal a local sync's.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from celery import Celery
from celery.exceptions import TimeoutError as CeleryTimeout
from celery.result import AsyncResult

from headwater.errors import Cancelled, FatalError
from headwater.executor.celery_app import INDEX_TASK, SYNC_TASK, create_app
from headwater.executor.checks import executor_warnings
from headwater.executor.queued import QueueMarkers
from headwater.indexer.report import IndexReport
from headwater.reports import SyncResult
from headwater.sync.report import RunReport

if TYPE_CHECKING:
    from headwater.workspace import Workspace

_apps: dict[str, Celery] = {}
log = logging.getLogger("headwater.executor")
PATIENCE_S = 15.0  # a wait longer than this is logged once, so a client never hangs mute


def app_for(ws: Workspace) -> Celery:
    key = str(ws.loaded.path)
    if key not in _apps:
        _apps[key] = create_app(ws.loaded)
    return _apps[key]


@dataclass(frozen=True)
class Enqueued:
    source_id: str
    task_id: str
    already: bool  # True: it was queued or running before; this call added nothing

    def as_dict(self) -> dict[str, Any]:
        return {"source": self.source_id, "task_id": self.task_id, "already_queued": self.already}


def enqueue_sync(
    ws: Workspace, source_ids: Sequence[str], *, force: bool = False, index: bool = True
) -> list[Enqueued]:
    """Enqueue one sync task per source not already queued or running."""
    app = app_for(ws)
    markers = QueueMarkers(ws.manifest.engine)
    seconds = ws.config.executor.visibility_timeout + 60
    out: list[Enqueued] = []
    for source_id in source_ids:
        task_id = str(uuid.uuid4())
        holder = markers.take(source_id, task_id, seconds)
        if holder is not None:
            out.append(Enqueued(source_id, holder, True))
            continue
        app.send_task(
            SYNC_TASK, args=[source_id], kwargs={"force": force, "index": index}, task_id=task_id
        )
        out.append(Enqueued(source_id, task_id, False))
    return out


def wait_for(ws: Workspace, task_id: str, poll_s: float = 1.0) -> dict[str, Any]:
    """Block until the task ends; its result (a dict), or FatalError if it raised.
    A task still not done after ``PATIENCE_S`` is said once (no worker may be running)."""
    result = AsyncResult(task_id, app=app_for(ws))
    said = time.monotonic() + PATIENCE_S
    while True:
        if ws.cancel.is_set():
            raise Cancelled(f"stopped waiting for task {task_id}; it goes on in its worker")
        try:
            value = result.get(timeout=poll_s, propagate=False)
        except CeleryTimeout:
            if time.monotonic() > said:
                said = float("inf")
                log.warning(
                    "still waiting for task %s (%s) after %.0f s: is a `headwater worker` "
                    "consuming its queue? `headwater workers` lists the live ones",
                    task_id, result.state, PATIENCE_S,
                )  # fmt: skip
            continue
        if result.failed():
            raise FatalError(f"task {task_id} failed on its worker: {value!r}; see `headwater dlq`")
        return dict(value or {})


def _index_report(results: Sequence[dict[str, Any]]) -> IndexReport:
    total = IndexReport()
    for value in results:
        if value.get("report"):
            total.add(IndexReport(**value["report"]))
    return total


def sync_on_workers(
    ws: Workspace, sources: Sequence[str] | None, *, index: bool = True, force: bool = False
) -> SyncResult:
    """Enqueue the sources' runs, wait for them and (with ``index``) their index tasks."""
    started = time.monotonic()
    ids = [s.id for s in ws._selected(sources)]
    result = SyncResult(warnings=ws.warnings(sources) + executor_warnings(ws.config))
    index_tasks: list[str] = []
    for queued in enqueue_sync(ws, ids, force=force, index=index):
        if queued.task_id.startswith("lease:"):
            continue  # running outside Celery (a local sync): nothing to wait on here
        value = wait_for(ws, queued.task_id)
        index_tasks.extend(value.get("index_tasks") or [])
        record = ws.manifest.runs.get(value["run_id"]) if value.get("run_id") else None
        if record is not None:
            section = ws.source_section(queued.source_id)
            result.runs.append(RunReport.from_record(record, section.type))
    if index:
        result.index = _index_report([wait_for(ws, t) for t in index_tasks])
        result.index.duration_s = time.monotonic() - started
    return result


def enqueue_index(ws: Workspace, count: int | None = None) -> list[str]:
    """Enqueue index tasks: ``count``, or one per pending batch up to ``index_tasks``."""
    from headwater.executor.work import index_tasks_for

    n = index_tasks_for(ws) if count is None else count
    app = app_for(ws)
    return [app.send_task(INDEX_TASK).id for _ in range(n)]


def index_on_workers(ws: Workspace) -> IndexReport:
    started = time.monotonic()
    report = _index_report([wait_for(ws, t) for t in enqueue_index(ws)])
    report.duration_s = time.monotonic() - started
    return report
