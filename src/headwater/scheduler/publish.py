"""The scheduler's side of the NATS executor: publish due runs, reconcile at start.

The scheduler keeps one connection to the work-queue stream while it runs (opened on
first use, dropped after an error and opened again next time). At start it reconciles
the manifest's due runs with the stream (``nats_dispatch.reconcile``): a run the manifest
says is due but no message carries is published. Each cycle then publishes the sources
that became due; one whose message still waits, or whose lease a live worker holds, is
left alone, so a due run is queued once however many cycles see it due.
"""

from __future__ import annotations

from collections.abc import Sequence

from headwater.errors import TransientError
from headwater.executor.nats_dispatch import Queued, open_queue, queue_runs, reconcile
from headwater.executor.nats_queue import WorkQueue
from headwater.runtime import Runtime
from headwater.scheduler.plans import plan_all


class NatsRuns:
    """Publishes due runs to the work queue over one kept connection."""

    def __init__(self) -> None:
        self._queue: WorkQueue | None = None

    def _open(self, rt: Runtime) -> WorkQueue:
        if self._queue is None:
            self._queue = open_queue(rt)
        return self._queue

    def publish(self, rt: Runtime, source_id: str, reason: str) -> Queued:
        """Queue ``source_id``'s due run (``TransientError`` when NATS does not answer)."""
        try:
            (queued,) = queue_runs(rt, self._open(rt), [source_id], reason)
        except TransientError:
            self.close()
            raise
        return queued

    def reconcile(self, rt: Runtime, sources: Sequence[str]) -> list[Queued]:
        """Publish every due run of ``sources`` that no message carries."""
        due = [p.source_id for p in plan_all(rt).due if p.source_id in set(sources)]
        try:
            return reconcile(rt, self._open(rt), due)
        except TransientError:
            self.close()
            raise

    def close(self) -> None:
        """Drop the connection (a later publish opens a new one)."""
        if self._queue is not None:
            self._queue.close()
            self._queue = None
