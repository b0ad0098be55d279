"""Runs, checkpoints and leases: the ledger of who synced what, when, and how far.

A run's window is fixed when it starts and reused when a killed run resumes. A mid-run
checkpoint is saved only after the batch before it is committed; a source's
``next_cursor`` (the final checkpoint of its last successful run) starts the next run.
The lease that keeps two processes from syncing one source at once lives in
``leases.py``; every write here that certifies progress takes an optional ``Lease`` and
fences it in the same transaction, so a stale owner commits nothing.
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, delete, desc, insert, select, update

from headwater.clock import as_utc, utcnow
from headwater.manifest import schema as t
from headwater.manifest.db import begin_write
from headwater.manifest.leases import LEASE_SECONDS, Lease, LeaseLedger, fence, lease_owner
from headwater.manifest.liveness import RUNS_TOTAL, bump, counter_key
from headwater.manifest.records import RunCounts, RunRecord

RUNNING = "running"
SUCCEEDED = "succeeded"
COMPLETED_WITH_ERRORS = "completed_with_errors"
FAILED = "failed"
CANCELLED = "cancelled"
SUCCESSFUL = (SUCCEEDED, COMPLETED_WITH_ERRORS)

__all__ = ["LEASE_SECONDS", "Lease", "RunLedger", "lease_owner"]


class RunLedger:
    """The runs, checkpoints and cursors of sources (and their leases)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.leases = LeaseLedger(engine)

    def start(self, source_id: str, window_start: datetime | None, window_end: datetime) -> str:
        """Record a new run of ``source_id`` over this window; returns its run id."""
        run_id = str(uuid.uuid4())
        with begin_write(self.engine) as conn:
            conn.execute(
                insert(t.runs).values(
                    run_id=run_id,
                    source_id=source_id,
                    status=RUNNING,
                    window_start=window_start,
                    window_end=window_end,
                    started_at=utcnow(),
                    duration_s=0.0,
                    attempts=1,
                    **RunCounts().as_dict(),
                )
            )
        return run_id

    def get(self, run_id: str) -> RunRecord | None:
        """The run ``run_id``, or None."""
        with self.engine.connect() as conn:
            row = conn.execute(select(t.runs).where(t.runs.c.run_id == run_id)).first()
        return RunRecord.from_row(row) if row else None

    def latest(self, source_id: str) -> RunRecord | None:
        """The latest run of ``source_id``, or None."""
        with self.engine.connect() as conn:
            row = conn.execute(
                select(t.runs)
                .where(t.runs.c.source_id == source_id)
                .order_by(desc(t.runs.c.started_at))
                .limit(1)
            ).first()
        return RunRecord.from_row(row) if row else None

    def interrupted(self, source_id: str) -> RunRecord | None:
        """The source's newest run if it never finished (the process died)."""
        latest = self.latest(source_id)
        return latest if latest is not None and latest.status == RUNNING else None

    def last_successful(self, source_id: str) -> RunRecord | None:
        """The latest successful run of ``source_id``, or None."""
        with self.engine.connect() as conn:
            row = conn.execute(
                select(t.runs)
                .where(t.runs.c.source_id == source_id, t.runs.c.status.in_(SUCCESSFUL))
                .order_by(desc(t.runs.c.started_at))
                .limit(1)
            ).first()
        return RunRecord.from_row(row) if row else None

    def mark_resumed(self, run_id: str) -> None:
        """Record that run ``run_id`` was resumed."""
        with begin_write(self.engine) as conn:
            conn.execute(
                update(t.runs)
                .where(t.runs.c.run_id == run_id)
                .values(attempts=t.runs.c.attempts + 1)
            )

    def finish(
        self,
        run_id: str,
        status: str,
        counts: RunCounts,
        duration_s: float,
        *,
        error: str | None = None,
        prune: dict[str, Any] | None = None,
        phases: dict[str, float] | None = None,
        lease: Lease | None = None,
    ) -> None:
        """Record the run's end: status, counts, duration (and ``phases``, its seconds per
        phase), error and prune (fenced by ``lease``); the first end of a run also bumps
        ``runs_total`` (source, status)."""
        with begin_write(self.engine) as conn:
            if lease is not None:
                fence(conn, lease)
            row = conn.execute(
                select(t.runs.c.source_id, t.runs.c.status).where(t.runs.c.run_id == run_id)
            ).first()
            if row is not None and row.status == RUNNING:
                bump(conn, RUNS_TOTAL, counter_key(row.source_id, status))
            conn.execute(
                update(t.runs)
                .where(t.runs.c.run_id == run_id)
                .values(
                    status=status,
                    finished_at=utcnow(),
                    duration_s=duration_s,
                    error=error,
                    prune=json.dumps(prune) if prune else None,
                    phases=json.dumps(phases) if phases is not None else None,
                    **counts.as_dict(),
                )
            )

    def recent(self, source_id: str | None = None, limit: int = 20) -> list[RunRecord]:
        """The latest ``limit`` runs, newest first, optionally of one source."""
        query = select(t.runs).order_by(desc(t.runs.c.started_at)).limit(limit)
        if source_id:
            query = query.where(t.runs.c.source_id == source_id)
        with self.engine.connect() as conn:
            return [RunRecord.from_row(r) for r in conn.execute(query)]

    # -- checkpoints -----------------------------------------------------------------

    def save_checkpoint(
        self,
        run_id: str,
        source_id: str,
        cursor: str,
        counts: RunCounts | None = None,
        *,
        lease: Lease | None = None,
    ) -> None:
        """Save a mid-run checkpoint (and the counts as of it) in one transaction.

        With ``lease``, the transaction first fences it: ``LeaseLost`` saves nothing.
        """
        with begin_write(self.engine) as conn:
            if lease is not None:
                fence(conn, lease)
            if counts is not None:
                values = counts.as_dict() | {"expected": counts.expected}
                conn.execute(update(t.runs).where(t.runs.c.run_id == run_id).values(**values))
            conn.execute(delete(t.checkpoints).where(t.checkpoints.c.run_id == run_id))
            conn.execute(
                insert(t.checkpoints).values(
                    run_id=run_id, source_id=source_id, cursor=cursor, saved_at=utcnow()
                )
            )

    def checkpoint(self, run_id: str) -> str | None:
        """The cursor last checkpointed by run ``run_id``, or None."""
        with self.engine.connect() as conn:
            row = conn.execute(
                select(t.checkpoints.c.cursor).where(t.checkpoints.c.run_id == run_id)
            ).first()
        return row[0] if row else None

    def next_cursor(self, source_id: str) -> str | None:
        """The cursor the next run of ``source_id`` starts from, or None."""
        with self.engine.connect() as conn:
            row = conn.execute(
                select(t.sources.c.next_cursor).where(t.sources.c.source_id == source_id)
            ).first()
        return row[0] if row else None

    def set_next_cursor(
        self, source_id: str, cursor: str | None, *, lease: Lease | None = None
    ) -> None:
        """Set the cursor the next run of ``source_id`` starts from (fenced by ``lease``)."""
        with begin_write(self.engine) as conn:
            if lease is not None:
                fence(conn, lease)
            conn.execute(
                update(t.sources)
                .where(t.sources.c.source_id == source_id)
                .values(next_cursor=cursor)
            )

    def last_prune_at(self, source_id: str) -> datetime | None:
        """When ``source_id`` was last pruned, or None."""
        with self.engine.connect() as conn:
            row = conn.execute(
                select(t.sources.c.last_prune_at).where(t.sources.c.source_id == source_id)
            ).first()
        return as_utc(row[0]) if row and row[0] else None

    def set_last_prune_at(self, source_id: str, moment: datetime) -> None:
        """Record when ``source_id`` was last pruned."""
        with begin_write(self.engine) as conn:
            conn.execute(
                update(t.sources)
                .where(t.sources.c.source_id == source_id)
                .values(last_prune_at=moment)
            )
