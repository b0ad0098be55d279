"""Shared rate-limit budgets in the manifest: the ``rate_limits`` and ``rate_sources`` tables.

Every process that reads a SaaS source through a credential takes its requests from one
row per credential, in a short write transaction that serializes the processes (SQLite's
``BEGIN IMMEDIATE`` through ``begin_write``; ``SELECT … FOR UPDATE`` on PostgreSQL): the
transaction reserves a start time (``ratelimit.reserve``) and commits, and the caller
sleeps until then outside it. A 429 blocks the row until its ``Retry-After`` for every
process, and `status` reads who is blocked through ``rate_sources``. ``ManifestGovernor``
(``ratelimit.SharedGovernor`` over this ledger) is the ``ratelimit.Governor`` the runtime
hands to each source's connector; ``ratelimit_redis`` keeps the same budgets in Redis.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from sqlalchemy import Connection, Engine, select, update
from sqlalchemy.dialects import postgresql, sqlite

from headwater.manifest import schema as t
from headwater.manifest.db import begin_write
from headwater.ratelimit import Rate, SharedGovernor, Throttled, block, reserve


def _tats(text: str) -> dict[int, float]:
    return {int(period): float(tat) for period, tat in json.loads(text).items()}


class RateLedger:
    """The shared budgets: one row per credential key (a ``ratelimit.RateStore``)."""

    def __init__(self, engine: Engine, clock: Callable[[], float] = time.time) -> None:
        self.engine = engine
        self.clock = clock

    def _locked_row(
        self, conn: Connection, key: str, vendor: str
    ) -> tuple[dict[int, float], float]:
        """The credential's row, created if new and locked for this transaction."""
        dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
        conn.execute(
            dialect.insert(t.rate_limits)
            .values(credential_key=key, vendor=vendor, tats="{}", blocked_until=0.0, reason="")
            .on_conflict_do_nothing(index_elements=[t.rate_limits.c.credential_key])
        )
        c = t.rate_limits.c
        query = select(c.tats, c.blocked_until).where(c.credential_key == key)
        if conn.dialect.name == "postgresql":
            query = query.with_for_update()
        row = conn.execute(query).one()
        return _tats(row.tats), float(row.blocked_until)

    def _store(self, conn: Connection, key: str, tats: dict[int, float], **values: object) -> None:
        c = t.rate_limits.c
        stored = json.dumps({str(p): v for p, v in sorted(tats.items())})
        conn.execute(
            update(t.rate_limits).where(c.credential_key == key).values(tats=stored, **values)
        )

    def register(self, source_id: str, key: str) -> None:
        """Record that ``source_id`` reads with the credential ``key`` (for `status`)."""
        dialect_rows = {"source_id": source_id, "credential_key": key}
        with begin_write(self.engine) as conn:
            dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
            statement = dialect.insert(t.rate_sources).values(**dialect_rows)
            conn.execute(
                statement.on_conflict_do_update(
                    index_elements=[t.rate_sources.c.source_id], set_={"credential_key": key}
                )
            )

    def reserve(self, key: str, vendor: str, rates: Sequence[Rate]) -> float:
        """Reserve one request on ``key``'s budget; the seconds to wait before sending it."""
        with begin_write(self.engine) as conn:
            tats, blocked_until = self._locked_row(conn, key, vendor)
            now = self.clock()
            reservation = reserve(tats, blocked_until, rates, now)
            self._store(conn, key, dict(reservation.tats))
        return max(0.0, reservation.start - now)

    def block(
        self, key: str, vendor: str, seconds: float, reason: str, rates: Sequence[Rate]
    ) -> None:
        """Block ``key`` for ``seconds`` from now for everyone (never shortening a block)."""
        with begin_write(self.engine) as conn:
            tats, blocked_until = self._locked_row(conn, key, vendor)
            until = max(blocked_until, self.clock() + seconds)
            self._store(conn, key, block(tats, until, rates), blocked_until=until, reason=reason)

    def throttled(self) -> dict[str, Throttled]:
        """The sources whose credential is blocked now, by source id."""
        s, c = t.rate_sources.c, t.rate_limits.c
        now = self.clock()
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(s.source_id, c.blocked_until, c.reason)
                .join(t.rate_limits, c.credential_key == s.credential_key)
                .where(c.blocked_until > now)
            ).all()
        return {
            r.source_id: Throttled(
                r.source_id, datetime.fromtimestamp(float(r.blocked_until), UTC), str(r.reason)
            )
            for r in rows
        }


ManifestGovernor = SharedGovernor
"""The governor of one source on the manifest's budgets (``SharedGovernor`` over a
``RateLedger``)."""
