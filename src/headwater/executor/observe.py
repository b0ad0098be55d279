"""What the Celery (or NATS) side looks like now: live workers, their tasks, queue
depths, holders.

Workers answer Celery's broadcast ``inspect``; queue depth is the broker's own count
(Redis ``LLEN`` of the queue's list, AMQP ``queue_declare(passive=True)``); which worker
runs which source is the lease's owner in the manifest, the one fact no broker knows.
With NATS, the depth is the work-queue stream's message count, and a source is queued
while a message waits for it.
"""

from __future__ import annotations

from typing import Any

from headwater.clock import iso, utcnow
from headwater.errors import TransientError
from headwater.executor.celery_app import app_for
from headwater.executor.nats_queue import WorkQueue
from headwater.manifest.claims import ClaimLedger
from headwater.manifest.liveness import WORKER
from headwater.manifest.queued import QueueMarkers
from headwater.reports import ExecutorState
from headwater.runtime import Runtime


def live_workers(rt: Runtime, timeout: float = 2.0) -> list[dict[str, Any]]:
    """Each live worker: its name, the queues it consumes and its tasks running now.
    NATS workers answer no broadcast: the live ones are the manifest's worker
    heartbeats, and what each runs is the sources whose lease it holds."""
    if rt.config.executor.type == "nats":
        running = QueueMarkers(rt.manifest.engine).running()
        return [
            {
                "name": beat.owner,
                "queues": [rt.config.executor.stream],
                "active": [
                    {"id": owner, "name": "sync", "args": [source_id]}
                    for source_id, owner in sorted(running.items())
                    if owner == beat.owner
                ],
            }
            for beat in rt.manifest.liveness.alive()
            if beat.role == WORKER
        ]
    inspect = app_for(rt).control.inspect(timeout=timeout)
    active = inspect.active() or {}
    queues = inspect.active_queues() or {}
    names = sorted(set(active) | set(queues))
    return [
        {
            "name": name,
            "queues": [q["name"] for q in queues.get(name, [])],
            "active": [
                {"id": task["id"], "name": task["name"], "args": list(task.get("args") or [])}
                for task in active.get(name, [])
            ],
        }
        for name in names
    ]


def queue_depths(rt: Runtime) -> dict[str, int | None]:
    """Messages waiting in each queue (None when the broker cannot be asked); with NATS
    the work-queue stream's messages (waiting or being worked on)."""
    executor = rt.config.executor
    if executor.type == "nats":
        with WorkQueue(executor, rt.config.workspace.tenant) as work:
            return {executor.stream: sum(work.waiting().values())}
    names = rt.config.executor.queues
    depths: dict[str, int | None] = {}
    with app_for(rt).connection_for_write() as conn:
        channel = conn.default_channel
        for queue in (names.sync, names.index):
            try:
                if conn.transport_cls in ("redis", "rediss") or "redis" in str(conn.transport):
                    depths[queue] = int(channel.client.llen(queue))
                else:
                    declared = channel.queue_declare(queue=queue, passive=True)
                    depths[queue] = int(declared.message_count)
            except Exception:  # an undeclared AMQP queue closes the channel: nothing waits
                depths[queue] = 0
                channel = conn.channel()
    return depths


def executor_status(rt: Runtime) -> ExecutorState:
    """The ``executor`` part of ``headwater status``."""
    now = utcnow()
    markers = QueueMarkers(rt.manifest.engine)
    depths: dict[str, int | None] | None = None
    error = None
    queued = markers.queued()
    if rt.config.executor.type == "celery":
        try:
            depths = queue_depths(rt)
        except Exception as exc:  # the broker is down: say so, the rest still shows
            error = f"{type(exc).__name__}: {exc}"
    elif rt.config.executor.type == "nats":
        try:
            with WorkQueue(rt.config.executor, rt.config.workspace.tenant) as work:
                waiting = work.waiting()
            depths = {rt.config.executor.stream: sum(waiting.values())}
            queued = {source_id: "nats" for source_id in waiting}
        except TransientError as exc:  # NATS is down: say so, the rest still shows
            error = str(exc)
    return ExecutorState(
        type=rt.config.executor.type,
        running=markers.running(),
        queued=queued,
        index_claims=ClaimLedger(rt.manifest.engine).holders(),
        checked_at=iso(now),
        queues=depths,
        queues_error=error,
    )
