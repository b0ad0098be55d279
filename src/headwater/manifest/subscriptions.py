"""Vendor subscriptions in the manifest: what the scheduler created and must renew.

A Graph subscription or a Drive push channel expires; the scheduler renews it before
then (``hints.subscriptions``). Its state lives here, durably, one row per source and
scope, so a restarted scheduler (or another one on a shared PostgreSQL manifest) renews
the subscription the last one created instead of piling up new ones. ``saved`` records
a success and clears the error; ``failed`` keeps the last good subscription and records
the error, the number of failures in a row and when to try again; ``status`` reads
``states``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Engine, delete, select

from headwater.clock import as_utc
from headwater.manifest import schema as t
from headwater.manifest.db import begin_write

s = t.subscriptions


@dataclass(frozen=True)
class SubscriptionState:
    """One kept subscription: the vendor's id, its expiry, and the last failure."""

    source_id: str
    scope: str
    vendor_id: str  # "" while none was ever created
    resource_id: str
    expires_at: datetime | None
    renewed_at: datetime | None
    failures: int
    last_error: str | None
    retry_at: datetime | None

    def as_dict(self) -> dict[str, Any]:
        """The state as a JSON-ready dict (``status --json``)."""

        def iso(value: datetime | None) -> str | None:
            return value.isoformat() if value is not None else None

        return {
            "scope": self.scope,
            "id": self.vendor_id or None,
            "expires_at": iso(self.expires_at),
            "renewed_at": iso(self.renewed_at),
            "failures": self.failures,
            "last_error": self.last_error,
            "retry_at": iso(self.retry_at),
        }


def _state(row: Any) -> SubscriptionState:
    m = row._mapping

    def when(value: datetime | None) -> datetime | None:
        return as_utc(value) if value is not None else None

    return SubscriptionState(
        source_id=str(m["source_id"]),
        scope=str(m["scope"]),
        vendor_id=str(m["vendor_id"]),
        resource_id=str(m["resource_id"]),
        expires_at=when(m["expires_at"]),
        renewed_at=when(m["renewed_at"]),
        failures=int(m["failures"]),
        last_error=m["last_error"],
        retry_at=when(m["retry_at"]),
    )


class SubscriptionLedger:
    """The ``subscriptions`` table."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def states(self, source_id: str | None = None) -> list[SubscriptionState]:
        """Every kept subscription (of ``source_id``), by source and scope."""
        query = select(s).order_by(s.c.source_id, s.c.scope)
        if source_id is not None:
            query = query.where(s.c.source_id == source_id)
        with self.engine.connect() as conn:
            return [_state(r) for r in conn.execute(query)]

    def saved(
        self,
        source_id: str,
        scope: str,
        *,
        vendor_id: str,
        resource_id: str,
        expires_at: datetime,
        now: datetime,
    ) -> None:
        """Record a subscription created or renewed at ``now``; clears any failure."""
        values = {
            "vendor_id": vendor_id, "resource_id": resource_id, "expires_at": expires_at,
            "renewed_at": now, "failures": 0, "last_error": None, "retry_at": None,
        }  # fmt: skip
        with begin_write(self.engine) as conn:
            _upsert(conn, source_id, scope, values)

    def failed(self, source_id: str, scope: str, error: str, *, retry_at: datetime) -> int:
        """Record a failed create or renewal (the last good one stays); the failures in
        a row so far."""
        with begin_write(self.engine) as conn:
            row = conn.execute(
                select(s.c.failures).where(s.c.source_id == source_id, s.c.scope == scope)
            ).first()
            failures = (int(row[0]) if row is not None else 0) + 1
            values: dict[str, Any] = {"failures": failures, "last_error": error[:2000],
                                      "retry_at": retry_at}  # fmt: skip
            if row is None:
                values |= {"vendor_id": "", "resource_id": "", "expires_at": None,
                           "renewed_at": None}  # fmt: skip
            _upsert(conn, source_id, scope, values)
        return failures

    def forget(self, source_id: str, scope: str) -> None:
        """Drop the row of a scope the source no longer has."""
        with begin_write(self.engine) as conn:
            conn.execute(delete(s).where(s.c.source_id == source_id, s.c.scope == scope))


def _upsert(conn: Connection, source_id: str, scope: str, values: dict[str, Any]) -> None:
    where = (s.c.source_id == source_id, s.c.scope == scope)
    if conn.execute(select(s.c.scope).where(*where)).first() is None:
        conn.execute(s.insert().values(source_id=source_id, scope=scope, **values))
    else:
        conn.execute(s.update().where(*where).values(**values))
