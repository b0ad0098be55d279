"""The change-event outbox: what changed, written in the transaction of the change.

A batch commit (``batch.write_batch``) and an index's confirmation
(``IndexState.record_applied``) add their events here on the connection of their own
transaction, so an event exists exactly when its change does: a rolled-back batch leaves
none, a committed one cannot lose its events to a crash. ``headwater.events`` reads them
in ``seq`` order (commit order, so revision order per document), sends them and removes
them once the broker confirmed. Nothing is written while ``enabled`` is false (no
``[events]`` table in the config), so an unused outbox never grows.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, Engine, delete, func, insert, select

from headwater.clock import utcnow
from headwater.manifest import schema as t
from headwater.manifest.db import begin_write

UPSERTED = "upserted"
DELETED = "deleted"
ACCESS_CHANGED = "access_changed"
APPLIED = "applied"

o = t.events_outbox


@dataclass(frozen=True)
class ChangeEvent:
    """One change to announce: a document's (``upserted``, ``deleted``,
    ``access_changed``: with its ``acl``) or an index's (``applied``: with the index and
    generation that confirmed ``revision``)."""

    kind: str
    source_id: str
    object_id: str
    document_id: str
    revision: int
    acl: tuple[str, ...] | None = None
    index_name: str | None = None
    generation: int | None = None


@dataclass(frozen=True)
class OutboxEvent(ChangeEvent):
    """An event read back from the outbox: its place in commit order and commit time."""

    seq: int = 0
    at: datetime | None = None


class Outbox:
    """The ``events_outbox`` table."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.enabled = False

    def add(self, conn: Connection, events: Sequence[ChangeEvent]) -> None:
        """Write ``events`` on ``conn``, inside the caller's transaction (if enabled)."""
        if not self.enabled or not events:
            return
        now = utcnow()
        conn.execute(
            insert(o),
            [
                {
                    "kind": e.kind,
                    "source_id": e.source_id,
                    "object_id": e.object_id,
                    "document_id": e.document_id,
                    "revision": e.revision,
                    "acl": None if e.acl is None else json.dumps(list(e.acl)),
                    "index_name": e.index_name,
                    "generation": e.generation,
                    "created_at": now,
                }
                for e in events
            ],
        )

    def pending(self, limit: int) -> list[OutboxEvent]:
        """The oldest ``limit`` events, in commit order."""
        with self.engine.connect() as conn:
            rows = conn.execute(select(o).order_by(o.c.seq).limit(limit))
            return [
                OutboxEvent(
                    kind=r.kind,
                    source_id=r.source_id,
                    object_id=r.object_id,
                    document_id=r.document_id,
                    revision=int(r.revision),
                    acl=None if r.acl is None else tuple(json.loads(r.acl)),
                    index_name=r.index_name,
                    generation=r.generation,
                    seq=int(r.seq),
                    at=r.created_at,
                )
                for r in rows
            ]

    def remove(self, seqs: Sequence[int]) -> None:
        """Forget events the broker confirmed."""
        if not seqs:
            return
        with begin_write(self.engine) as conn:
            for start in range(0, len(seqs), 500):
                conn.execute(delete(o).where(o.c.seq.in_(list(seqs[start : start + 500]))))

    def depth(self) -> int:
        """How many events wait to be sent."""
        with self.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(o)).scalar_one())
