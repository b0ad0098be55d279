"""Full-replace push sessions in the manifest, so every ``serve`` worker sees the same ones.

A session row holds its source in ``active_source`` while it is open; the column's unique
index lets at most one session per source be open, whichever process opens it (a second
insert fails on the index and the caller is told which session is open). Every state
change is a conditional update from the state it was decided in, so two processes never
both complete (or abort) one session. The object ids a session sent are rows of
``push_session_objects``; a complete deletes the source's active documents among none of
them, read in keyset pages (never the whole set in memory).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine, delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from headwater.clock import as_utc, utcnow
from headwater.manifest import schema as t
from headwater.manifest.db import begin_write
from headwater.manifest.records import ACTIVE, DocumentRecord

OPEN, COMPLETING, COMPLETED, ABORTED, EXPIRED = (
    "open",
    "completing",
    "completed",
    "aborted",
    "expired",
)
LIVE = (OPEN, COMPLETING)
PAGE = 500


@dataclass(frozen=True)
class SessionRecord:
    """One push session as the manifest holds it."""

    session_id: str
    source_id: str
    state: str
    opened_at: datetime
    touched_at: datetime
    closed_at: datetime | None
    sent: int
    deleted: int

    @classmethod
    def from_row(cls, row: Any) -> SessionRecord:
        m = row._mapping
        closed = m["closed_at"]
        return cls(
            session_id=str(m["session_id"]),
            source_id=str(m["source_id"]),
            state=str(m["state"]),
            opened_at=as_utc(m["opened_at"]),
            touched_at=as_utc(m["touched_at"]),
            closed_at=as_utc(closed) if closed is not None else None,
            sent=int(m["sent"]),
            deleted=int(m["deleted"]),
        )

    def expires_at(self, idle: timedelta) -> datetime | None:
        """When the session expires if nothing is sent (None once it is closed)."""
        return self.touched_at + idle if self.state in LIVE else None


class SessionLedger:
    """The ``push_sessions`` and ``push_session_objects`` tables."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def get(self, session_id: str) -> SessionRecord | None:
        """The session ``session_id``, or None."""
        s = t.push_sessions
        with self.engine.connect() as conn:
            row = conn.execute(select(s).where(s.c.session_id == session_id)).first()
        return SessionRecord.from_row(row) if row is not None else None

    def active(self, source_id: str) -> SessionRecord | None:
        """The open (or completing) session of ``source_id``, or None."""
        s = t.push_sessions
        with self.engine.connect() as conn:
            row = conn.execute(select(s).where(s.c.active_source == source_id)).first()
        return SessionRecord.from_row(row) if row is not None else None

    def expire_idle(self, source_id: str, idle: timedelta) -> str | None:
        """Close the source's live session if nothing touched it for ``idle``: it
        deletes nothing, its sent ids are forgotten. Returns its id if it expired."""
        live = self.active(source_id)
        if live is None or live.touched_at + idle > utcnow():
            return None
        return live.session_id if self._close(live.session_id, live.state, EXPIRED) else None

    def open(self, source_id: str) -> SessionRecord | None:
        """A new open session of ``source_id``; None when one is open already."""
        now = utcnow()
        session_id = str(uuid.uuid4())
        try:
            with begin_write(self.engine) as conn:
                conn.execute(
                    insert(t.push_sessions).values(
                        session_id=session_id,
                        source_id=source_id,
                        active_source=source_id,
                        state=OPEN,
                        opened_at=now,
                        touched_at=now,
                        sent=0,
                        deleted=0,
                    )
                )
        except IntegrityError:
            return None  # another session of the source is open (the unique index)
        return self.get(session_id)

    def record_sent(self, session_id: str, object_ids: Sequence[str]) -> bool:
        """Add ``object_ids`` to the open session's sent set and touch it, in one
        transaction; False (nothing written) unless the session is open."""
        s = t.push_sessions
        o = t.push_session_objects
        unique = sorted(set(object_ids))
        with begin_write(self.engine) as conn:
            touched = conn.execute(
                update(s)
                .where(s.c.session_id == session_id, s.c.state == OPEN)
                .values(touched_at=utcnow())
            )
            if touched.rowcount != 1:
                return False
            fresh = list(unique)
            for start in range(0, len(unique), PAGE):
                part = unique[start : start + PAGE]
                held = conn.execute(
                    select(o.c.object_id).where(
                        o.c.session_id == session_id, o.c.object_id.in_(part)
                    )
                )
                known = {str(r[0]) for r in held}
                fresh = [x for x in fresh if x not in known]
            if fresh:
                conn.execute(insert(o), [{"session_id": session_id, "object_id": x} for x in fresh])
                conn.execute(
                    update(s).where(s.c.session_id == session_id).values(sent=s.c.sent + len(fresh))
                )
        return True

    def transition(self, session_id: str, before: str, after: str) -> bool:
        """Move a live session from ``before`` to live state ``after``; False if it was
        not in ``before`` (another process moved it first)."""
        s = t.push_sessions
        with begin_write(self.engine) as conn:
            moved = conn.execute(
                update(s)
                .where(s.c.session_id == session_id, s.c.state == before)
                .values(state=after, touched_at=utcnow())
            )
            return bool(moved.rowcount == 1)

    def close(self, session_id: str, before: str, after: str, deleted: int = 0) -> bool:
        """End a session in ``before`` as ``after`` (completed, aborted, expired)."""
        return self._close(session_id, before, after, deleted)

    def _close(self, session_id: str, before: str, after: str, deleted: int = 0) -> bool:
        s = t.push_sessions
        with begin_write(self.engine) as conn:
            closed = conn.execute(
                update(s)
                .where(s.c.session_id == session_id, s.c.state == before)
                .values(state=after, active_source=None, closed_at=utcnow(), deleted=deleted)
            )
            if closed.rowcount != 1:
                return False
            conn.execute(
                delete(t.push_session_objects).where(
                    t.push_session_objects.c.session_id == session_id
                )
            )
        return True

    def _missing(self, source_id: str, session_id: str) -> Any:
        docs = t.documents.c
        sent = select(t.push_session_objects.c.object_id).where(
            t.push_session_objects.c.session_id == session_id
        )
        return (docs.source_id == source_id) & (docs.state == ACTIVE) & docs.object_id.not_in(sent)

    def count_unsent(self, source_id: str, session_id: str) -> int:
        """How many active documents of the source the session did not send."""
        with self.engine.connect() as conn:
            query = select(func.count()).where(self._missing(source_id, session_id))
            return int(conn.execute(query).scalar_one())

    def unsent(self, source_id: str, session_id: str) -> Iterator[list[DocumentRecord]]:
        """The source's active documents the session did not send, a keyset page at a
        time (each page read after the previous one was handled)."""
        after = ""
        while True:
            with self.engine.connect() as conn:
                rows = conn.execute(
                    select(t.documents)
                    .where(self._missing(source_id, session_id), t.documents.c.document_id > after)
                    .order_by(t.documents.c.document_id)
                    .limit(PAGE)
                ).all()
            if not rows:
                return
            page = [DocumentRecord.from_row(r) for r in rows]
            yield page
            after = page[-1].document_id
