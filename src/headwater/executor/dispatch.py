"""The client side of the Celery executor: enqueue runs and index tasks, and wait.

``CeleryExecutor`` is the ``Executor`` a workspace gets with ``[executor] type =
"celery"``; ``headwater sync --no-wait`` and the scheduler call ``enqueue_sync``. A
source is enqueued only after its queued marker was taken (see ``manifest.queued``); one
already queued or running is not enqueued again, and a waiting caller waits on the task
that holds it. An enqueue happens or leaves nothing: a
message the broker refuses clears its marker and raises ``BrokerUnavailable`` naming the
broker; a waiter whose task never reached the broker (its marker is gone or names
another task while the task is still unknown) enqueues the source again and follows
that task. Waiting reads task results from the result backend and run reports from the
manifest, so the reports equal a local sync's.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any
from urllib.parse import urlsplit

from celery.exceptions import TimeoutError as CeleryTimeout
from celery.result import AsyncResult
from kombu.exceptions import OperationalError
from kombu.utils.url import maybe_sanitize_url

from headwater.config import executor_warnings
from headwater.errors import BrokerUnavailable, Cancelled, ConfigError, FatalError
from headwater.executor.celery_app import app_for
from headwater.executor.local import LocalExecutor, sync_warnings
from headwater.executor.observe import executor_status
from headwater.executor.tasks import INDEX_TASK, SYNC_TASK
from headwater.executor.work import index_tasks_for
from headwater.indexer.report import IndexReport
from headwater.manifest.queued import QueueMarkers
from headwater.reports import ExecutorState, SyncResult
from headwater.runtime import Runtime
from headwater.sync.permissions import PermissionResult
from headwater.sync.report import PruneResult, RunReport
from headwater.sync.runner import Progress

log = logging.getLogger("headwater.executor")
PATIENCE_S = 15.0  # a wait longer than this is logged once, so a client never hangs mute
# A refused publish is retried briefly, then reported (well within ENQUEUE_GRACE_S).
PUBLISH_RETRY = {"max_retries": 2, "interval_start": 0.2, "interval_step": 0.5, "interval_max": 1}
LOST = "lost"  # wait_for's answer for a task that never reached the broker


@dataclass(frozen=True)
class Enqueued:
    """One source's sync task: enqueued now, or found queued or running already."""

    source_id: str
    task_id: str
    already: bool  # True: it was queued or running before; this call added nothing

    def as_dict(self) -> dict[str, Any]:
        """The JSON ``sync --no-wait`` prints per source."""
        return {"source": self.source_id, "task_id": self.task_id, "already_queued": self.already}


def enqueue_sync(
    rt: Runtime, source_ids: Sequence[str], *, force: bool = False, index: bool = True
) -> list[Enqueued]:
    """Enqueue one sync task per source not already queued or running."""
    app = app_for(rt)
    markers = QueueMarkers(rt.manifest.engine)
    seconds = rt.config.executor.visibility_timeout + 60
    out: list[Enqueued] = []
    for source_id in source_ids:
        task_id = str(uuid.uuid4())
        holder = markers.take(source_id, task_id)
        if holder is not None:
            out.append(Enqueued(source_id, holder, True))
            continue
        try:
            app.send_task(
                SYNC_TASK,
                args=[source_id],
                kwargs={"force": force, "index": index},
                task_id=task_id,
                retry=True,
                retry_policy=PUBLISH_RETRY,
            )
        except (OperationalError, OSError) as exc:
            markers.clear(source_id, task_id)
            raise _refused(rt, source_id, exc, out) from exc
        markers.confirm(source_id, task_id, seconds)
        out.append(Enqueued(source_id, task_id, False))
    return out


def broker_label(url: str) -> str:
    """The broker URL for messages: its password masked."""
    return str(maybe_sanitize_url(url, mask="***"))


def _refused(
    rt: Runtime, source_id: str, exc: BaseException, done: Sequence[Enqueued]
) -> BrokerUnavailable:
    url = rt.config.executor.broker_url or ""
    reason = " ".join(str(exc).split())
    password = _password(url)
    if password:
        reason = reason.replace(password, "***")
    sent = [q.source_id for q in done if not q.already]
    before = f" ({', '.join(sent)} enqueued before it)" if sent else ""
    return BrokerUnavailable(
        f"the Celery broker {broker_label(url)} refused the sync task of source "
        f"{source_id!r} ({type(exc).__name__}: {reason}); it was not enqueued and nothing "
        f"waits for it{before}. Start the broker or fix [executor] broker_url, then run "
        "`headwater sync` again."
    )


def _password(url: str) -> str | None:
    try:
        return urlsplit(url).password
    except ValueError:
        return None


def wait_for(
    rt: Runtime,
    task_id: str,
    poll_s: float = 1.0,
    *,
    enqueued: Callable[[], bool] | None = None,
) -> dict[str, Any]:
    """Block until the task ends; its result (a dict), or FatalError if it raised.
    A task still not done after ``PATIENCE_S`` is said once (no worker may be running).
    ``enqueued`` (a sync task's marker check): while the task is still unknown to the
    result backend and it answers False, the task never reached the broker (its
    enqueuer failed or died) and ``{"status": LOST}`` is returned."""
    result = AsyncResult(task_id, app=app_for(rt))
    said = time.monotonic() + PATIENCE_S
    while True:
        if rt.controls.cancel.is_set():
            raise Cancelled(f"stopped waiting for task {task_id}; it goes on in its worker")
        try:
            value = result.get(timeout=poll_s, propagate=False)
        except CeleryTimeout:
            if enqueued is not None and result.state == "PENDING" and not enqueued():
                return {"status": LOST}
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
    rt: Runtime, sources: Sequence[str] | None, *, index: bool = True, force: bool = False
) -> SyncResult:
    """Enqueue the sources' runs, wait for them and (with ``index``) their index tasks."""
    started = time.monotonic()
    ids = [s.id for s in rt.sources.selected(sources)]
    result = SyncResult(warnings=sync_warnings(rt, sources) + executor_warnings(rt.config))
    index_tasks: list[str] = []
    for queued in enqueue_sync(rt, ids, force=force, index=index):
        value = _wait_for_sync(rt, queued, force=force, index=index)
        if value is None:
            continue  # running outside Celery (a local sync): nothing to wait on here
        index_tasks.extend(value.get("index_tasks") or [])
        record = rt.manifest.runs.get(value["run_id"]) if value.get("run_id") else None
        if record is not None:
            section = rt.sources.section(queued.source_id)
            result.runs.append(RunReport.from_record(record, section.type))
    if index:
        result.index = _index_report([wait_for(rt, t) for t in index_tasks])
        result.index.duration_s = time.monotonic() - started
    return result


def _wait_for_sync(
    rt: Runtime, queued: Enqueued, *, force: bool, index: bool
) -> dict[str, Any] | None:
    """The sync task's result; a task that never reached the broker is enqueued again
    (or the one that holds the source now is followed). None: a local sync holds it."""
    markers = QueueMarkers(rt.manifest.engine)
    source_id = queued.source_id
    while not queued.task_id.startswith("lease:"):
        task_id = queued.task_id
        value = wait_for(rt, task_id, enqueued=partial(markers.names, source_id, task_id))
        if value.get("status") != LOST:
            return value
        (queued,) = enqueue_sync(rt, [queued.source_id], force=force, index=index)
        log.warning(
            "task %s of source %s never reached the broker (its enqueuer failed or died); "
            "waiting on task %s instead",
            task_id, queued.source_id, queued.task_id,
        )  # fmt: skip
    return None


def enqueue_index(rt: Runtime, count: int | None = None) -> list[str]:
    """Enqueue index tasks: ``count``, or one per pending batch up to ``index_tasks``."""
    n = index_tasks_for(rt) if count is None else count
    app = app_for(rt)
    return [app.send_task(INDEX_TASK).id for _ in range(n)]


def index_on_workers(rt: Runtime) -> IndexReport:
    """Enqueue index tasks and wait for them; their reports added up."""
    started = time.monotonic()
    report = _index_report([wait_for(rt, t) for t in enqueue_index(rt)])
    report.duration_s = time.monotonic() - started
    return report


class CeleryExecutor:
    """Runs syncs and drains on Celery workers: enqueue, then wait for the results."""

    name = "celery"

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.local = LocalExecutor(rt)  # what never goes to a worker

    def sync(
        self,
        sources: Sequence[str] | None = None,
        *,
        index: bool = True,
        force: bool = False,
        full: bool = False,
        progress: Progress | None = None,
        max_concurrent: int = 1,
        skip_busy: bool = False,
    ) -> SyncResult:
        """Enqueue the sources' runs and wait for them (and, with ``index``, their
        indexing); ``progress``, ``max_concurrent`` and ``skip_busy`` are the workers'."""
        if full:
            raise ConfigError(
                "sync --full is not dispatched to Celery workers yet; run it with the "
                'local executor (`[executor] type = "local"`) or from one worker host.'
            )
        return sync_on_workers(self.rt, sources, index=index, force=force)

    def sync_permissions(
        self, sources: Sequence[str] | None = None, *, index: bool = True
    ) -> PermissionResult:
        """Permission syncs run here (they read no content)."""
        return self.local.sync_permissions(sources, index=index)

    def index(self, only: Sequence[str] | None = None) -> IndexReport:
        """Every pending document on the workers; ``only`` given ids here."""
        if only is not None:
            return self.local.index(only)
        return index_on_workers(self.rt)

    def prune(
        self, sources: Sequence[str] | None = None, *, dry_run: bool = False, force: bool = False
    ) -> list[PruneResult]:
        """Prunes run here (a complete enumeration, then deletes in the manifest)."""
        return self.local.prune(sources, dry_run=dry_run, force=force)

    def state(self) -> ExecutorState:
        """The Celery queues, lease owners and index claims."""
        return executor_status(self.rt)
