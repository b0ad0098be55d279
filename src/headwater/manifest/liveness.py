"""Who is alive, and counts that never go down: the ``heartbeats`` and ``counters`` tables.

A scheduler or worker process stamps its heartbeat row on its own timer (``Heartbeat``, a
daemon thread), so "is a scheduler running?" is a query, not a guess from run times: a
row stamped within ``ALIVE_FOR`` is a live process, an older one a process that is gone
(its row is deleted when it stops cleanly). A counter is bumped inside the transaction
of the event it counts (``bump``), so it is exactly as durable as that event and never
derived from history that housekeeping prunes.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Engine, delete, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import SQLAlchemyError

from headwater.clock import as_utc, utcnow
from headwater.manifest import schema as t
from headwater.manifest.db import begin_write

log = logging.getLogger(__name__)

BEAT_EVERY_S = 10.0
ALIVE_FOR = timedelta(seconds=3 * BEAT_EVERY_S)  # three missed beats: gone
SCHEDULER = "scheduler"
WORKER = "worker"
RUNS_TOTAL = "runs_total"


@dataclass(frozen=True)
class Beat:
    """One process's heartbeat row."""

    owner: str
    role: str
    started_at: datetime
    seen_at: datetime


def _insert(conn: Connection, table: Any) -> Any:
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    return dialect.insert(table)


class Liveness:
    """Heartbeat rows of schedulers and workers, and the persisted counters."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def beat(self, owner: str, role: str, started_at: datetime) -> None:
        """Stamp ``owner``'s heartbeat now (creating its row on the first beat)."""
        h = t.heartbeats.c
        now = utcnow()
        with begin_write(self.engine) as conn:
            statement = _insert(conn, t.heartbeats).values(
                owner=owner, role=role, started_at=started_at, seen_at=now
            )
            conn.execute(
                statement.on_conflict_do_update(index_elements=[h.owner], set_={"seen_at": now})
            )

    def gone(self, owner: str) -> None:
        """Forget ``owner``'s heartbeat (it stopped cleanly)."""
        with begin_write(self.engine) as conn:
            conn.execute(delete(t.heartbeats).where(t.heartbeats.c.owner == owner))

    def alive(self, now: datetime | None = None) -> list[Beat]:
        """Processes that beat within ``ALIVE_FOR``, oldest first."""
        since = (now or utcnow()) - ALIVE_FOR
        h = t.heartbeats.c
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(t.heartbeats).where(h.seen_at >= since).order_by(h.started_at)
            ).all()
        return [Beat(r.owner, r.role, as_utc(r.started_at), as_utc(r.seen_at)) for r in rows]

    def counter(self, name: str) -> dict[str, int]:
        """Every key of counter ``name`` with its value."""
        c = t.counters.c
        with self.engine.connect() as conn:
            rows = conn.execute(select(c.key, c.value).where(c.name == name)).all()
        return {str(r.key): int(r.value) for r in rows}


def bump(conn: Connection, name: str, key: str, by: int = 1) -> None:
    """Add ``by`` to counter ``name`` at ``key`` in ``conn``'s transaction."""
    c = t.counters.c
    statement = _insert(conn, t.counters).values(name=name, key=key, value=by)
    conn.execute(
        statement.on_conflict_do_update(
            index_elements=[c.name, c.key], set_={"value": t.counters.c.value + by}
        )
    )


def counter_key(*labels: str) -> str:
    """The ``key`` of a label set (labels never contain ``|``: source ids and statuses)."""
    return "|".join(labels)


def key_labels(key: str) -> Sequence[str]:
    """The labels of a counter ``key``."""
    return key.split("|")


class Heartbeat:
    """A daemon thread stamping one process's heartbeat every ``BEAT_EVERY_S`` seconds."""

    def __init__(
        self,
        engine_of: Callable[[], Engine],
        owner: str,
        role: str,
        every_s: float = BEAT_EVERY_S,
    ) -> None:
        self.engine_of = engine_of  # asked at each beat: a reloaded runtime has a new one
        self.owner, self.role, self.every_s = owner, role, every_s
        self.started_at = utcnow()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"headwater-{role}-heartbeat")
        self._thread.daemon = True

    def start(self) -> Heartbeat:
        """Beat once now, then on the timer (a manifest that is down only delays it)."""
        self._beat()
        self._thread.start()
        return self

    def _beat(self) -> None:
        try:
            Liveness(self.engine_of()).beat(self.owner, self.role, self.started_at)
        except SQLAlchemyError as exc:  # the manifest restarts: beat again next time
            log.warning("heartbeat of %s not recorded: %s", self.owner, exc)

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self._beat()

    def stop(self) -> None:
        """Stop beating and remove the row (best effort: a dead row ages out anyway)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        try:
            Liveness(self.engine_of()).gone(self.owner)
        except SQLAlchemyError as exc:
            log.warning("heartbeat of %s not removed (it ages out): %s", self.owner, exc)
