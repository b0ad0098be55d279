"""What a Celery task does, without Celery: one source run, or claimed index batches.

The sync body is the local executor's sync of one source with ``index=False``: the same
``SyncRunner`` under the same fenced lease as a local sync, so windows, gates, batch
commits and checkpoints are identical, and a redelivered task resumes the interrupted
run from its checkpoint. The index body claims a batch of pending documents, drains
exactly those ids (``Indexer.drain(only=…)``), releases them, and repeats until
nothing unclaimed is pending.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from headwater.executor.local import LocalExecutor
from headwater.indexer.report import IndexReport
from headwater.manifest.claims import ClaimLedger
from headwater.runtime import Runtime
from headwater.sync.report import RunReport


@dataclass(frozen=True)
class SyncOutcome:
    """A sync task's run, and how many index tasks should follow it."""

    run: RunReport | None
    index_tasks_needed: int


def sync_one(rt: Runtime, source_id: str, *, force: bool = False) -> SyncOutcome:
    """Run ``source_id`` here (never delegating) and say how many index tasks to enqueue."""
    result = LocalExecutor(rt).sync([source_id], index=False, force=force)
    run = result.runs[0] if result.runs else None
    return SyncOutcome(run, index_tasks_for(rt))


def index_tasks_for(rt: Runtime) -> int:
    """Index tasks worth enqueueing now: one per pending batch, at most ``index_tasks``."""
    indexer = rt.indexes.indexer()
    pending = max(indexer.pending_count().values(), default=0)
    if pending == 0:
        return 0
    return min(rt.config.executor.index_tasks, math.ceil(pending / indexer.batch_size))


def index_claimed(rt: Runtime, owner: str) -> IndexReport:
    """Claim, index and release batches of pending documents until none is left.

    ``owner`` is the task id, so a redelivered task takes its own earlier claims back at
    once; other owners' claims are skipped until they expire.
    """
    ledger = ClaimLedger(rt.manifest.engine)
    ledger.release(owner)
    indexer = rt.indexes.indexer()
    targets = [(target.name, target.version) for target in indexer.targets]
    seconds = rt.config.executor.claim_seconds
    report = IndexReport()
    tried: set[str] = set()
    while not rt.controls.cancel.is_set():
        ids = ledger.claim(owner, targets, limit=indexer.batch_size, seconds=seconds, exclude=tried)
        if not ids:
            break
        tried.update(ids)  # a document blocked in the DLQ stays pending: never loop on it
        try:
            report.add(indexer.drain(only=ids))
        finally:
            ledger.release(owner, ids)
    return report
