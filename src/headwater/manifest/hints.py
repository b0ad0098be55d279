"""The hint queue: change notifications waiting for a targeted read, durable and merged.

A hint names one object of one source (or, with ``object_id`` "", the whole source: a
*scope* hint, read by a sync). ``add`` writes it in one transaction, so a webhook may
answer 202 once ``add`` returned. Hints for one object merge into one row: ``count``
grows, and ``due_at`` moves to ``debounce`` after the newest hint, but never beyond
``max_wait`` after the first one of the row, so a burst of saves is one read and a
steady stream of them is still read. A targeted read takes the due rows, reads them,
and ``done`` removes each row whose ``count`` it read: a hint that came in during the
read keeps its row for the next one. ``hint_sources`` keeps, per source, the last hint
and the last read with its lag (first hint of the rows read to the end of the read),
and the count of hints dropped as out of the source's scope.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Engine, delete, func, select, update
from sqlalchemy.exc import IntegrityError

from headwater.clock import as_utc, utcnow
from headwater.manifest import schema as t
from headwater.manifest.db import begin_write

h = t.hints
hs = t.hint_sources

CHANGED, DELETED, SCOPE = "changed", "deleted", "scope"
KINDS = (CHANGED, DELETED, SCOPE)


def object_key(object_id: str) -> str:
    """The row key of ``object_id`` (object ids may be longer than an index allows)."""
    return hashlib.sha256(object_id.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Hint:
    """One queued row: an object (or the scope, ``object_id`` "") waiting to be read."""

    source_id: str
    object_id: str
    kind: str
    origin: str
    count: int
    received_at: datetime
    last_at: datetime
    due_at: datetime

    def as_dict(self) -> dict[str, Any]:
        """The hint as a JSON-ready dict."""
        return {
            "source": self.source_id,
            "object_id": self.object_id,
            "kind": self.kind,
            "origin": self.origin,
            "count": self.count,
            "received_at": self.received_at.isoformat(),
            "last_at": self.last_at.isoformat(),
            "due_at": self.due_at.isoformat(),
        }


@dataclass(frozen=True)
class HintSourceState:
    """Per source: the last hint, the last targeted read and its lag, the drop count."""

    source_id: str
    last_hint_at: datetime | None
    last_origin: str | None
    last_read_at: datetime | None
    last_lag_s: float | None
    received: int
    read: int
    dropped: int
    queued: int = 0

    def as_dict(self) -> dict[str, Any]:
        """The state as a JSON-ready dict."""
        return {
            "source": self.source_id,
            "queued": self.queued,
            "last_hint_at": self.last_hint_at.isoformat() if self.last_hint_at else None,
            "last_origin": self.last_origin,
            "last_read_at": self.last_read_at.isoformat() if self.last_read_at else None,
            "last_lag_s": self.last_lag_s,
            "received": self.received,
            "read": self.read,
            "dropped": self.dropped,
        }


def _hint(row: Any) -> Hint:
    m = row._mapping  # ``row.count`` would be the tuple method
    return Hint(
        source_id=str(m["source_id"]),
        object_id=str(m["object_id"]),
        kind=str(m["kind"]),
        origin=str(m["origin"]),
        count=int(m["count"]),
        received_at=as_utc(m["received_at"]),
        last_at=as_utc(m["last_at"]),
        due_at=as_utc(m["due_at"]),
    )


class HintQueue:
    """The ``hints`` and ``hint_sources`` tables."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def add(
        self,
        source_id: str,
        object_ids: list[str],
        *,
        kind: str,
        origin: str,
        debounce: timedelta,
        max_wait: timedelta,
    ) -> int:
        """Queue ``object_ids`` ("" for the scope) durably; the number of rows touched."""
        if kind not in KINDS:
            raise ValueError(f"hint kind {kind!r} is not one of {KINDS}")
        ids = list(dict.fromkeys(object_ids))
        for attempt in range(3):
            try:
                with begin_write(self.engine) as conn:
                    now = utcnow()
                    for object_id in ids:
                        merge = (object_id, kind, origin, now, debounce, max_wait)
                        self._merge(conn, source_id, *merge)
                    self._note(
                        conn, source_id, received=len(ids), last_hint_at=now, last_origin=origin
                    )
                return len(ids)
            except IntegrityError:  # another writer inserted the same row first: merge again
                if attempt == 2:
                    raise
        return 0

    @staticmethod
    def _merge(
        conn: Connection,
        source_id: str,
        object_id: str,
        kind: str,
        origin: str,
        now: datetime,
        debounce: timedelta,
        max_wait: timedelta,
    ) -> None:
        key = object_key(object_id)
        row = conn.execute(
            select(h.c.received_at, h.c.count).where(
                h.c.source_id == source_id, h.c.object_key == key
            )
        ).first()
        if row is None:
            conn.execute(
                h.insert().values(
                    source_id=source_id,
                    object_key=key,
                    object_id=object_id,
                    kind=kind,
                    origin=origin,
                    count=1,
                    received_at=now,
                    last_at=now,
                    due_at=now + debounce,
                )
            )
            return
        received, count = as_utc(row[0]), int(row[1])
        due = min(now + debounce, received + max_wait)
        conn.execute(
            update(h)
            .where(h.c.source_id == source_id, h.c.object_key == key)
            .values(kind=kind, origin=origin, count=count + 1, last_at=now, due_at=due)
        )

    @staticmethod
    def _note(conn: Connection, source_id: str, **values: Any) -> None:
        """Add counts to (``received``, ``read``, ``dropped``) and set the other columns
        of ``source_id``'s ``hint_sources`` row, created when missing."""
        counters = {k: values.pop(k) for k in ("received", "read", "dropped") if k in values}
        exists = conn.execute(select(hs.c.source_id).where(hs.c.source_id == source_id)).first()
        if exists is None:
            conn.execute(
                hs.insert().values(
                    source_id=source_id,
                    received=counters.get("received", 0),
                    read=counters.get("read", 0),
                    dropped=counters.get("dropped", 0),
                    **values,
                )
            )
            return
        increments = {k: getattr(hs.c, k) + v for k, v in counters.items()}
        conn.execute(update(hs).where(hs.c.source_id == source_id).values(**increments, **values))

    def due(self, source_id: str, now: datetime | None = None, limit: int = 500) -> list[Hint]:
        """The hints of ``source_id`` whose debounce has passed, oldest first."""
        moment = now or utcnow()
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(h)
                .where(h.c.source_id == source_id, h.c.due_at <= moment)
                .order_by(h.c.received_at, h.c.object_id)
                .limit(limit)
            ).all()
        return [_hint(r) for r in rows]

    def due_sources(self, now: datetime | None = None) -> list[str]:
        """The sources that have a due hint."""
        moment = now or utcnow()
        with self.engine.connect() as conn:
            rows = conn.execute(select(h.c.source_id).where(h.c.due_at <= moment).distinct())
            return sorted(str(r[0]) for r in rows)

    def next_due(self) -> datetime | None:
        """When the earliest queued hint falls due, or None when the queue is empty."""
        with self.engine.connect() as conn:
            value = conn.execute(select(func.min(h.c.due_at))).scalar()
        return as_utc(value) if value is not None else None

    def queued(self, source_id: str | None = None) -> list[Hint]:
        """Every queued hint (of one source), oldest first."""
        query = select(h).order_by(h.c.source_id, h.c.received_at, h.c.object_id)
        if source_id is not None:
            query = query.where(h.c.source_id == source_id)
        with self.engine.connect() as conn:
            return [_hint(r) for r in conn.execute(query).all()]

    def done(self, source_id: str, hints: list[Hint], *, dropped: int = 0) -> None:
        """Remove the rows ``hints`` read (unless a newer hint came meanwhile) and record
        the read: its end, its lag from the oldest hint read, the hints dropped."""
        now = utcnow()
        with begin_write(self.engine) as conn:
            for hint in hints:
                conn.execute(
                    delete(h).where(
                        h.c.source_id == source_id,
                        h.c.object_key == object_key(hint.object_id),
                        h.c.count == hint.count,  # grows with every hint merged in
                    )
                )
            values: dict[str, Any] = {"read": len(hints) - dropped, "dropped": dropped}
            if hints:
                oldest = min(x.received_at for x in hints)
                values |= {"last_read_at": now, "last_lag_s": (now - oldest).total_seconds()}
            self._note(conn, source_id, **values)

    def postpone(self, source_id: str, hints: list[Hint], wait: timedelta) -> None:
        """Make ``hints`` due again ``wait`` from now (their read could not run now)."""
        later = utcnow() + wait
        with begin_write(self.engine) as conn:
            for hint in hints:
                conn.execute(
                    update(h)
                    .where(h.c.source_id == source_id, h.c.object_key == object_key(hint.object_id))
                    .values(due_at=later)
                )

    def drop(self, source_id: str, count: int = 1) -> None:
        """Count ``count`` hints dropped before they were queued (out of scope)."""
        with begin_write(self.engine) as conn:
            self._note(conn, source_id, dropped=count)

    def depths(self) -> dict[str, tuple[int, datetime]]:
        """Per source with hints queued: how many rows wait, and the oldest one's first
        hint (``headwater_hints_queue_depth`` and ``_oldest_age_seconds``)."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(h.c.source_id, func.count(), func.min(h.c.received_at)).group_by(
                    h.c.source_id
                )
            ).all()
        return {str(r[0]): (int(r[1]), as_utc(r[2])) for r in rows}

    def states(self) -> dict[str, HintSourceState]:
        """Per source: its ``hint_sources`` row and how many hints it has queued."""
        with self.engine.connect() as conn:
            counts: dict[str, int] = {
                str(r[0]): int(r[1])
                for r in conn.execute(select(h.c.source_id, func.count()).group_by(h.c.source_id))
            }
            rows = conn.execute(select(hs)).all()
        out: dict[str, HintSourceState] = {}
        for r in rows:
            out[str(r.source_id)] = HintSourceState(
                source_id=str(r.source_id),
                last_hint_at=as_utc(r.last_hint_at) if r.last_hint_at else None,
                last_origin=r.last_origin,
                last_read_at=as_utc(r.last_read_at) if r.last_read_at else None,
                last_lag_s=r.last_lag_s,
                received=int(r.received),
                read=int(r.read),
                dropped=int(r.dropped),
                queued=counts.get(str(r.source_id), 0),
            )
        return out
