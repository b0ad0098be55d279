"""Runs, checkpoints and leases: the ledger of who synced what, when, and how far.

A run's window is fixed when it starts and reused when a killed run resumes. A mid-run
checkpoint is saved only after the batch before it is committed; a source's
``next_cursor`` (the final checkpoint of its last successful run) starts the next run.
A lease row keeps two processes from syncing one source at once; a lease whose owner
process is gone (same host, dead pid) or whose time ran out is taken over.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import uuid
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine, delete, desc, insert, select, update

from headwater.clock import as_utc, utcnow
from headwater.errors import FatalError
from headwater.manifest import schema as t
from headwater.manifest.db import begin_write
from headwater.manifest.records import RunCounts, RunRecord

log = logging.getLogger(__name__)

RUNNING = "running"
SUCCEEDED = "succeeded"
COMPLETED_WITH_ERRORS = "completed_with_errors"
FAILED = "failed"
CANCELLED = "cancelled"
SUCCESSFUL = (SUCCEEDED, COMPLETED_WITH_ERRORS)

LEASE_SECONDS = 300


def lease_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _owner_is_dead(owner: str) -> bool:
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


class RunLedger:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def start(self, source_id: str, window_start: datetime | None, window_end: datetime) -> str:
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
        with self.engine.connect() as conn:
            row = conn.execute(select(t.runs).where(t.runs.c.run_id == run_id)).first()
        return RunRecord.from_row(row) if row else None

    def latest(self, source_id: str) -> RunRecord | None:
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
        with self.engine.connect() as conn:
            row = conn.execute(
                select(t.runs)
                .where(t.runs.c.source_id == source_id, t.runs.c.status.in_(SUCCESSFUL))
                .order_by(desc(t.runs.c.started_at))
                .limit(1)
            ).first()
        return RunRecord.from_row(row) if row else None

    def mark_resumed(self, run_id: str) -> None:
        with begin_write(self.engine) as conn:
            conn.execute(
                update(t.runs)
                .where(t.runs.c.run_id == run_id)
                .values(attempts=t.runs.c.attempts + 1)
            )

    def save_counts(self, run_id: str, counts: RunCounts, duration_s: float) -> None:
        with begin_write(self.engine) as conn:
            conn.execute(
                update(t.runs)
                .where(t.runs.c.run_id == run_id)
                .values(duration_s=duration_s, **counts.as_dict())
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
    ) -> None:
        with begin_write(self.engine) as conn:
            conn.execute(
                update(t.runs)
                .where(t.runs.c.run_id == run_id)
                .values(
                    status=status,
                    finished_at=utcnow(),
                    duration_s=duration_s,
                    error=error,
                    prune=json.dumps(prune) if prune else None,
                    **counts.as_dict(),
                )
            )

    def recent(self, source_id: str | None = None, limit: int = 20) -> list[RunRecord]:
        query = select(t.runs).order_by(desc(t.runs.c.started_at)).limit(limit)
        if source_id:
            query = query.where(t.runs.c.source_id == source_id)
        with self.engine.connect() as conn:
            return [RunRecord.from_row(r) for r in conn.execute(query)]

    # -- checkpoints -----------------------------------------------------------------

    def save_checkpoint(
        self, run_id: str, source_id: str, cursor: str, counts: RunCounts | None = None
    ) -> None:
        """Save a mid-run checkpoint (and the counts as of it) in one transaction."""
        with begin_write(self.engine) as conn:
            if counts is not None:
                conn.execute(
                    update(t.runs).where(t.runs.c.run_id == run_id).values(**counts.as_dict())
                )
            conn.execute(delete(t.checkpoints).where(t.checkpoints.c.run_id == run_id))
            conn.execute(
                insert(t.checkpoints).values(
                    run_id=run_id, source_id=source_id, cursor=cursor, saved_at=utcnow()
                )
            )

    def checkpoint(self, run_id: str) -> str | None:
        with self.engine.connect() as conn:
            row = conn.execute(
                select(t.checkpoints.c.cursor).where(t.checkpoints.c.run_id == run_id)
            ).first()
        return row[0] if row else None

    def next_cursor(self, source_id: str) -> str | None:
        with self.engine.connect() as conn:
            row = conn.execute(
                select(t.sources.c.next_cursor).where(t.sources.c.source_id == source_id)
            ).first()
        return row[0] if row else None

    def set_next_cursor(self, source_id: str, cursor: str | None) -> None:
        with begin_write(self.engine) as conn:
            conn.execute(
                update(t.sources)
                .where(t.sources.c.source_id == source_id)
                .values(next_cursor=cursor)
            )

    def last_prune_at(self, source_id: str) -> datetime | None:
        with self.engine.connect() as conn:
            row = conn.execute(
                select(t.sources.c.last_prune_at).where(t.sources.c.source_id == source_id)
            ).first()
        return as_utc(row[0]) if row and row[0] else None

    def set_last_prune_at(self, source_id: str, moment: datetime) -> None:
        with begin_write(self.engine) as conn:
            conn.execute(
                update(t.sources)
                .where(t.sources.c.source_id == source_id)
                .values(last_prune_at=moment)
            )

    # -- leases ------------------------------------------------------------------------

    def acquire_lease(self, source_id: str, owner: str, seconds: int = LEASE_SECONDS) -> None:
        """Take the source's lease or raise FatalError naming who holds it."""
        now = utcnow()
        expires = now + timedelta(seconds=seconds)
        with begin_write(self.engine) as conn:
            row = conn.execute(
                select(t.leases).where(t.leases.c.source_id == source_id).with_for_update()
            ).first()
            if row is None:
                conn.execute(
                    insert(t.leases).values(source_id=source_id, owner=owner, expires_at=expires)
                )
                return
            holder, until = row._mapping["owner"], as_utc(row._mapping["expires_at"])
            if holder != owner and until > now and not _owner_is_dead(holder):
                raise FatalError(
                    f"source {source_id!r} is being synced by {holder} until {until.isoformat()}; "
                    "wait for that run to finish, or stop that process."
                )
            if holder != owner:
                log.warning("lease of %s taken over from %s (expired or dead)", source_id, holder)
            conn.execute(
                update(t.leases)
                .where(t.leases.c.source_id == source_id)
                .values(owner=owner, expires_at=expires)
            )

    def renew_lease(self, source_id: str, owner: str, seconds: int = LEASE_SECONDS) -> None:
        with begin_write(self.engine) as conn:
            conn.execute(
                update(t.leases)
                .where(t.leases.c.source_id == source_id, t.leases.c.owner == owner)
                .values(expires_at=utcnow() + timedelta(seconds=seconds))
            )

    def release_lease(self, source_id: str, owner: str) -> None:
        with begin_write(self.engine) as conn:
            conn.execute(
                delete(t.leases).where(t.leases.c.source_id == source_id, t.leases.c.owner == owner)
            )
