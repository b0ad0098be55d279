"""What the Celery side looks like now: live workers, their tasks, queue depths, holders.

Workers answer Celery's broadcast ``inspect``; queue depth is the broker's own count
(Redis ``LLEN`` of the queue's list, AMQP ``queue_declare(passive=True)``); which worker
runs which source is the lease's owner in the manifest, the one fact no broker knows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from headwater.clock import as_utc, iso, utcnow
from headwater.executor.claims import ClaimLedger
from headwater.executor.queued import QueueMarkers
from headwater.manifest import schema as t

if TYPE_CHECKING:
    from headwater.workspace import Workspace


def live_workers(ws: Workspace, timeout: float = 2.0) -> list[dict[str, Any]]:
    from headwater.executor.dispatch import app_for

    inspect = app_for(ws).control.inspect(timeout=timeout)
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


def queue_depths(ws: Workspace) -> dict[str, int | None]:
    """Messages waiting in each queue (None when the broker cannot be asked)."""
    from headwater.executor.dispatch import app_for

    names = ws.config.executor.queues
    depths: dict[str, int | None] = {}
    with app_for(ws).connection_for_write() as conn:
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


def executor_status(ws: Workspace) -> dict[str, Any]:
    """The ``executor`` part of ``headwater status``."""
    now = utcnow()
    with ws.manifest.engine.connect() as conn:
        leases = conn.execute(select(t.leases)).all()
    running = {
        row._mapping["source_id"]: row._mapping["owner"]
        for row in leases
        if as_utc(row._mapping["expires_at"]) > now
    }
    report: dict[str, Any] = {
        "type": ws.config.executor.type,
        "running": running,
        "queued": QueueMarkers(ws.manifest.engine).queued(),
        "index_claims": ClaimLedger(ws.manifest.engine).holders(),
        "checked_at": iso(now),
    }
    if ws.config.executor.type == "celery":
        try:
            report["queues"] = queue_depths(ws)
        except Exception as exc:  # the broker is down: say so, the rest still shows
            report["queues"] = {"error": f"{type(exc).__name__}: {exc}"}
    return report
