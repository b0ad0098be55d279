"""Queued-run markers: a source sits in the broker's sync queue at most once.

Whoever enqueues a sync task (the scheduler, ``headwater sync``) first takes the
source's marker row (task id, expiry); a live marker, or a live lease (a worker is
running the source), means "already queued or running" and nothing is enqueued. A
marker is taken for ``ENQUEUE_GRACE_S`` only; the enqueuer ``confirm``s it (the
broker's visibility timeout) once the broker accepted the message, and ``clear``s it
when the broker refused: so an enqueuer that died between marker and message blocks
its source for a minute, not for the visibility timeout. The sync task deletes its
marker when it ends; a confirmed marker whose task was lost expires after the
visibility timeout, so a lost message never blocks a source for good.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import Engine, delete, select, update
from sqlalchemy.dialects import postgresql, sqlite

from headwater.clock import as_utc, utcnow
from headwater.manifest import schema as t
from headwater.manifest.db import begin_write

q = t.run_queue

# How long a marker holds before its enqueuer confirms that the broker took the message:
# longer than a refused publish takes (see ``dispatch.PUBLISH_RETRY``), short enough that
# an enqueuer killed in between blocks nobody for long.
ENQUEUE_GRACE_S = 60


class QueueMarkers:
    """The ``run_queue`` table: one live marker per queued source."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def holder(self, source_id: str) -> str | None:
        """The task id queued or running for ``source_id``, or None."""
        now = utcnow()
        with self.engine.connect() as conn:
            row = conn.execute(
                select(q.c.task_id, q.c.expires_at).where(q.c.source_id == source_id)
            ).first()
            if row is not None and as_utc(row[1]) > now:
                return str(row[0])
            lease = conn.execute(
                select(t.leases.c.owner, t.leases.c.expires_at).where(
                    t.leases.c.source_id == source_id
                )
            ).first()
        if lease is not None and as_utc(lease[1]) > now:
            return f"lease:{lease[0]}"
        return None

    def take(self, source_id: str, task_id: str, seconds: int = ENQUEUE_GRACE_S) -> str | None:
        """Mark ``source_id`` queued as ``task_id``; return the holder instead if taken."""
        holder = self.holder(source_id)
        if holder is not None:
            return holder
        now = utcnow()
        dialect = postgresql if self.engine.dialect.name == "postgresql" else sqlite
        values = {
            "source_id": source_id,
            "task_id": task_id,
            "queued_at": now,
            "expires_at": now + timedelta(seconds=seconds),
        }
        statement = (
            dialect.insert(q)
            .values(**values)
            .on_conflict_do_update(
                index_elements=[q.c.source_id], set_=values, where=q.c.expires_at <= now
            )
            .returning(q.c.task_id)
        )
        with begin_write(self.engine) as conn:
            won = conn.execute(statement).first()
        if won is None or won[0] != task_id:
            return self.holder(source_id) or "another enqueuer"
        return None

    def confirm(self, source_id: str, task_id: str, seconds: int) -> None:
        """The broker holds ``task_id``'s message: keep its marker ``seconds`` from now.
        Nothing changes when the marker is gone already (the task ran and ended)."""
        with begin_write(self.engine) as conn:
            conn.execute(
                update(q)
                .where(q.c.source_id == source_id, q.c.task_id == task_id)
                .values(expires_at=utcnow() + timedelta(seconds=seconds))
            )

    def names(self, source_id: str, task_id: str) -> bool:
        """Whether ``source_id``'s live marker is ``task_id``'s (a waiter's check that the
        task it waits on was really enqueued, or still may run)."""
        return self.holder(source_id) == task_id

    def clear(self, source_id: str, task_id: str) -> None:
        """Drop ``task_id``'s marker of ``source_id`` (another task's stays)."""
        with begin_write(self.engine) as conn:
            conn.execute(delete(q).where(q.c.source_id == source_id, q.c.task_id == task_id))

    def queued(self) -> dict[str, str]:
        """Live markers: source id → task id."""
        now = utcnow()
        with self.engine.connect() as conn:
            rows = conn.execute(select(q.c.source_id, q.c.task_id, q.c.expires_at)).all()
        return {str(r[0]): str(r[1]) for r in rows if as_utc(r[2]) > now}

    def running(self) -> dict[str, str]:
        """Sources a live lease holds: source id → the lease's owner."""
        now = utcnow()
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(t.leases.c.source_id, t.leases.c.owner, t.leases.c.expires_at)
            ).all()
        return {str(r[0]): str(r[1]) for r in rows if as_utc(r[2]) > now}
