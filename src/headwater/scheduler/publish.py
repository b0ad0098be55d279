"""The scheduler's side of a remote executor: queue due runs for Celery or NATS workers.

Celery: ``dispatch.enqueue_sync`` under the source's queued marker. NATS: the scheduler
keeps one connection to the work-queue stream while it runs (opened on first use,
dropped after an error and opened again next time). At start it reconciles the
manifest's due runs with the stream (``nats_dispatch.reconcile``): a run the manifest
says is due but no message carries is published. Each cycle then publishes the sources
that became due; one whose message still waits, or whose lease a live worker holds, is
left alone, so a due run is queued once however many cycles see it due.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from headwater.errors import TransientError
from headwater.runtime import Runtime
from headwater.scheduler.outcome import ids
from headwater.scheduler.plans import plan_all

if TYPE_CHECKING:  # imported when used: a local scheduler loads neither client
    from headwater.executor.nats_queue import WorkQueue

log = logging.getLogger("headwater.scheduler")


class RemoteRuns:
    """Queues due runs for workers (``TransientError`` when the broker or NATS refuses)."""

    def __init__(self) -> None:
        self._queue: WorkQueue | None = None

    def _open(self, rt: Runtime) -> WorkQueue:
        from headwater.executor.nats_dispatch import open_queue

        if self._queue is None:
            self._queue = open_queue(rt)
        return self._queue

    def queue(self, rt: Runtime, source_id: str, reason: str) -> None:
        """Queue ``source_id``'s due run on the configured executor, and say so."""
        if rt.config.executor.type != "nats":
            from headwater.executor.dispatch import enqueue_sync

            for q in enqueue_sync(rt, [source_id]):
                if not q.already:
                    log.info("enqueued sync of %s (%s): task %s", q.source_id, reason,
                             q.task_id, extra=ids(q.source_id))  # fmt: skip
            return
        from headwater.executor.nats_dispatch import queue_runs

        try:
            (sent,) = queue_runs(rt, self._open(rt), [source_id], reason)
        except TransientError:
            self.close()
            raise
        if sent.state in ("published", "republished"):
            log.info("published the run of %s (%s) after run %s", source_id, reason,
                     sent.after_run, extra=ids(source_id))  # fmt: skip

    def reconcile(self, rt: Runtime, sources: Sequence[str]) -> None:
        """NATS, at start: publish every due run of ``sources`` no message carries."""
        if rt.config.executor.type != "nats":
            return
        from headwater.executor.nats_dispatch import reconcile

        due = [p.source_id for p in plan_all(rt).due if p.source_id in set(sources)]
        try:
            reconcile(rt, self._open(rt), due)
        except TransientError as exc:  # each cycle publishes what is due anyway
            self.close()
            log.error("work queue not reconciled at start: %s", exc)

    def close(self) -> None:
        """Drop the NATS connection (a later publish opens a new one)."""
        if self._queue is not None:
            self._queue.close()
            self._queue = None
