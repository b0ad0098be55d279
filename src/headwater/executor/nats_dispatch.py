"""The publishing side of the NATS executor: queue due runs, reconcile, and wait.

``queue_runs`` is what the scheduler (each cycle) and ``headwater sync`` call: a source
whose run message waits in the stream already, or whose lease a live process holds, is
left alone; any other gets one message naming the run it follows (``nats_queue``), so the
same due run published twice is one message. A message JetStream drops as a duplicate
although none waits for the source was lost after it was published (a purged stream, a
message deleted by hand): it is published again under a fresh id, and a worker that
meets the extra copy of a run already done acks it without running anything. The
scheduler's startup reconcile is one such pass over every due source, logged.

``NatsExecutor.sync`` publishes, then waits on the stream and the manifest, which stays
the truth: a source is done when no message waits for it and no lease holds it, and its
report is its newest run. Permission syncs and prunes run here, as with Celery.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

from headwater.config import executor_warnings
from headwater.errors import Cancelled, ConfigError
from headwater.executor.local import LocalExecutor, sync_warnings
from headwater.executor.nats_queue import FIRST, RunMessage, WorkQueue
from headwater.executor.work import index_claimed
from headwater.indexer.report import IndexReport
from headwater.manifest.owners import lease_owner
from headwater.manifest.queued import QueueMarkers
from headwater.manifest.runs import RUNNING
from headwater.reports import ExecutorState, SyncResult
from headwater.runtime import Runtime
from headwater.sync.permissions import PermissionResult
from headwater.sync.report import PruneResult, RunReport
from headwater.sync.runner import Progress

log = logging.getLogger("headwater.executor")
POLL_S = 0.5
PATIENCE_S = 15.0  # a wait longer than this is logged once


@dataclass(frozen=True)
class Queued:
    """One source's run: published now, found waiting or running, or republished."""

    source_id: str
    after_run: str  # the run the queued run follows ("" when a live lease holds the source)
    state: str  # published, waiting, running, republished


def open_queue(rt: Runtime) -> WorkQueue:
    """A connection to the runtime's work-queue stream (``TransientError`` when down)."""
    return WorkQueue(rt.config.executor, rt.config.workspace.tenant)


def queue_runs(
    rt: Runtime,
    queue: WorkQueue,
    source_ids: Sequence[str],
    reason: str,
    *,
    force: bool = False,
    index: bool = True,
) -> list[Queued]:
    """Publish a run message for each source no message carries and no lease holds."""
    waiting = queue.waiting()
    running = QueueMarkers(rt.manifest.engine).running()
    out: list[Queued] = []
    for source_id in source_ids:
        if source_id in waiting:
            out.append(Queued(source_id, "", "waiting"))
            continue
        if source_id in running:
            out.append(Queued(source_id, "", "running"))
            continue
        latest = rt.manifest.runs.latest(source_id)
        after, resume = (latest.run_id, latest.status == RUNNING) if latest else (FIRST, False)
        message = RunMessage(source_id, after, reason, force, index, resume)
        state = "published"
        if not queue.publish(message):  # its id was seen, yet no message waits: lost
            again = f"{message.message_id(queue.tenant)}:again:{time.time_ns()}"
            queue.publish(message, msg_id=again)
            state = "republished"
            log.warning("the run message of %s (after run %s) was lost; republished",
                        source_id, message.after_run)  # fmt: skip
        out.append(Queued(source_id, message.after_run, state))
    return out


def reconcile(rt: Runtime, queue: WorkQueue, due: Sequence[str]) -> list[Queued]:
    """The scheduler's start: every due source gets a message unless one carries it."""
    queued = queue_runs(rt, queue, due, "reconcile")
    fresh = [q.source_id for q in queued if q.state in ("published", "republished")]
    log.info(
        "reconciled the work queue with the manifest: %d due, %d carried by a message, "
        "%d running, published for %s",
        len(due),
        sum(q.state == "waiting" for q in queued),
        sum(q.state == "running" for q in queued),
        ", ".join(fresh) or "none",
    )
    return queued


def wait_for_runs(rt: Runtime, queue: WorkQueue, queued: Sequence[Queued]) -> list[RunReport]:
    """Wait until no message waits for these sources and no lease holds them; the
    newest run of each source that ran after its message was published."""
    pending = {q.source_id: q for q in queued}
    reports: list[RunReport] = []
    said = time.monotonic() + PATIENCE_S
    while pending:
        if rt.controls.cancel.is_set():
            raise Cancelled("stopped waiting for the queued runs; they go on on the workers")
        waiting = queue.waiting()
        running = QueueMarkers(rt.manifest.engine).running()
        for source_id in [s for s in pending if s not in waiting and s not in running]:
            q = pending.pop(source_id)
            latest = rt.manifest.runs.latest(source_id)
            if latest is not None and latest.run_id != q.after_run:
                reports.append(RunReport.from_record(latest, rt.sources.section(source_id).type))
        if pending and time.monotonic() > said:
            said = float("inf")
            log.warning("still waiting for the runs of %s after %.0f s: is a `headwater "
                        "worker` consuming the stream %s?", ", ".join(sorted(pending)),
                        PATIENCE_S, rt.config.executor.stream)  # fmt: skip
        if pending:
            time.sleep(POLL_S)
    return reports


class NatsExecutor:
    """Runs syncs on NATS workers: publish the runs, then wait for the manifest to say so."""

    name = "nats"

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
        """Publish the sources' runs and wait for them; ``index`` also drains here what
        the workers left pending (under claims: nothing twice)."""
        if full:
            raise ConfigError(
                "sync --full is not dispatched to NATS workers; run it with the local "
                'executor (`[executor] type = "local"`) or from one worker host.'
            )
        rt, started = self.rt, time.monotonic()
        result = SyncResult(warnings=sync_warnings(rt, sources) + executor_warnings(rt.config))
        ids = [s.id for s in rt.sources.selected(sources)]
        with open_queue(rt) as queue:
            queued = queue_runs(rt, queue, ids, "manual", force=force, index=index)
            result.runs.extend(wait_for_runs(rt, queue, queued))
        if index:
            result.index = self.index()
        result.duration_s = time.monotonic() - started
        return result

    def sync_permissions(
        self, sources: Sequence[str] | None = None, *, index: bool = True
    ) -> PermissionResult:
        """Permission syncs run here (they read no content)."""
        return self.local.sync_permissions(sources, index=index)

    def index(self, only: Sequence[str] | None = None) -> IndexReport:
        """Pending documents indexed here under claims (workers index after their runs);
        ``only`` given ids here."""
        if only is not None:
            return self.local.index(only)
        started = time.monotonic()
        report = index_claimed(self.rt, owner=f"nats-client:{lease_owner()}"[:200])
        report.duration_s = time.monotonic() - started
        return report

    def prune(
        self, sources: Sequence[str] | None = None, *, dry_run: bool = False, force: bool = False
    ) -> list[PruneResult]:
        """Prunes run here (a complete enumeration, then deletes in the manifest)."""
        return self.local.prune(sources, dry_run=dry_run, force=force)

    def state(self) -> ExecutorState:
        """Lease owners, index claims and the messages waiting per source."""
        from headwater.executor.observe import executor_status  # it loads Celery too

        return executor_status(self.rt)
