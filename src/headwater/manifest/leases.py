"""Fenced leases: who may sync a source now, proven again inside every commit.

A lease row (source, owner, epoch, expiry) is taken by one process at a time; a lease
whose time ran out, or whose owner process is provably gone (``owners.py``), is taken
over. Each acquisition or takeover increments the row's ``epoch``: the fencing token.
A ``Heartbeat`` thread renews the lease every third of its length, so a long step (a
slow enumeration, a large fetch) never lets it expire, and notices when it was lost.
Every write that certifies progress (batch commit, checkpoint, prune commit, the run's
finish) calls ``fence`` in its own transaction: the UPDATE matches only while owner and
epoch are unchanged, so a stale owner that wakes up after a takeover raises
``LeaseLost`` and its transaction rolls back.

On PostgreSQL the fenced UPDATE also row-locks the lease, so a takeover waits for a
commit in flight instead of racing it, but never for long: the acquisition asks for the
row lock with ``NOWAIT`` and tries again until ``seconds + TAKEOVER_SLACK_SECONDS``,
and the manifest's sessions end a transaction left idle for ``seconds +
IDLE_SLACK_SECONDS`` (``db.py``), so an owner frozen inside a transaction (SIGSTOP, a
stopped container, a half-open connection) releases the lock. A lease whose committed
row is unexpired is refused at once, locked or not.

An acquisition is a *takeover* when the previous holder is another process that did not
release the lease (it expired unrenewed, or its process is gone): the row's ``released``
flag tells a release from an expiry, and ``takeovers`` counts them per source (the
``headwater_lease_takeovers_total`` metric). Takeovers are logged at INFO (``-v``).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Engine, insert, select, update
from sqlalchemy.exc import OperationalError

from headwater.clock import as_utc, utcnow
from headwater.errors import FatalError, LeaseLost, SourceBusy
from headwater.manifest import schema as t
from headwater.manifest.db import IDLE_SLACK_SECONDS, begin_write
from headwater.manifest.owners import lease_owner, owner_is_dead

__all__ = ["LEASE_SECONDS", "Heartbeat", "Lease", "LeaseLedger", "fence", "lease_owner"]

log = logging.getLogger(__name__)

LEASE_SECONDS = 60
TAKEOVER_SLACK_SECONDS = 10  # how much longer than a lease a takeover waits for its row
RETRY_SECONDS = 0.25  # between two tries for a row lock the frozen holder keeps
LOCK_NOT_AVAILABLE = "55P03"  # PostgreSQL's SQLSTATE for a NOWAIT that met a lock


class _RowLocked(Exception):
    """The lease row is locked by another transaction; its committed state is expired."""

    def __init__(self, holder: str, until: datetime) -> None:
        self.holder, self.until = holder, until


@dataclass(frozen=True)
class Lease:
    """A held lease: the fencing token every commit of the run carries."""

    source_id: str
    owner: str
    epoch: int
    seconds: int = LEASE_SECONDS


def _lost(lease: Lease, holder: str | None = None) -> LeaseLost:
    taker = f"by {holder} " if holder else ""
    return LeaseLost(
        f"the lease of source {lease.source_id!r} (epoch {lease.epoch}, owner {lease.owner}) "
        f"was taken over {taker}after it expired: this process went {lease.seconds} s "
        "([sync] lease_seconds) without renewing it (it was stopped, frozen or cut off "
        "from the manifest). This run stopped without committing; the other process "
        "resumes the run. Raise [sync] lease_seconds if this process was only slow."
    )


def fence(conn: Connection, lease: Lease) -> None:
    """Prove, inside the caller's transaction, that ``lease`` still holds; extend it.

    Raises ``LeaseLost`` (the caller's transaction then rolls back) when the owner or the
    epoch changed, i.e. another process took the lease over.
    """
    result = conn.execute(
        update(t.leases)
        .where(
            t.leases.c.source_id == lease.source_id,
            t.leases.c.owner == lease.owner,
            t.leases.c.epoch == lease.epoch,
        )
        .values(expires_at=utcnow() + timedelta(seconds=lease.seconds))
    )
    if result.rowcount != 1:
        holder = conn.execute(
            select(t.leases.c.owner).where(t.leases.c.source_id == lease.source_id)
        ).scalar()
        raise _lost(lease, holder)


def _refuse_if_held(source_id: str, owner: str, holder: str, until: datetime) -> None:
    """SourceBusy when another owner holds an unexpired lease and is not provably dead."""
    if holder != owner and until > utcnow() and not owner_is_dead(holder):
        raise SourceBusy(
            f"source {source_id!r} is being synced by {holder} until {until.isoformat()}; "
            "wait for that run to finish, or stop that process. (A lease is taken over "
            "before it expires only when its owner is provably gone: a process of this "
            "host and PID namespace that no longer runs.)",
            source_id=source_id,
            holder=holder,
            until=until,
        )


class LeaseLedger:
    """The leases table: acquire, check, renew and release sources' leases."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def acquire(self, source_id: str, owner: str, seconds: int = LEASE_SECONDS) -> Lease:
        """Take the source's lease (a new epoch) or raise FatalError naming its holder.

        A live holder is refused at once. An expired lease whose row another transaction
        still locks (its owner froze mid-commit) is tried again until ``seconds +
        TAKEOVER_SLACK_SECONDS``: by then PostgreSQL ended that owner's idle session.
        """
        deadline = time.monotonic() + seconds + TAKEOVER_SLACK_SECONDS
        while True:
            try:
                return self._acquire_once(source_id, owner, seconds)
            except _RowLocked as locked:
                if time.monotonic() >= deadline:
                    raise FatalError(
                        f"source {source_id!r}: the lease of {locked.holder} expired at "
                        f"{locked.until.isoformat()}, but its row stayed locked by that "
                        f"owner's transaction for {seconds + TAKEOVER_SLACK_SECONDS} s; "
                        "the manifest server should have ended that session after "
                        f"{seconds + IDLE_SLACK_SECONDS} s idle. Check pg_stat_activity for "
                        "it, end it (pg_terminate_backend), and run the sync again."
                    ) from None
                time.sleep(RETRY_SECONDS)

    def _acquire_once(self, source_id: str, owner: str, seconds: int) -> Lease:
        now = utcnow()
        expires = now + timedelta(seconds=seconds)
        with begin_write(self.engine) as conn:
            row = self._locked_row(conn, source_id, owner)
            if row is None:
                conn.execute(
                    insert(t.leases).values(
                        source_id=source_id,
                        owner=owner,
                        epoch=1,
                        expires_at=expires,
                        released=0,
                        takeovers=0,
                    )
                )
                return Lease(source_id, owner, 1, seconds)
            holder, until = row["owner"], as_utc(row["expires_at"])
            _refuse_if_held(source_id, owner, holder, until)
            epoch = int(row["epoch"]) + 1
            takeover = holder != owner and not row["released"]
            if takeover:
                log.info(
                    "lease of %s taken over from %s, which did not release it (%s; epoch %d)",
                    source_id,
                    holder,
                    f"expired {until.isoformat()}" if until <= now else "its process is gone",
                    epoch,
                )
            elif holder != owner:
                log.info(
                    "lease of %s passes from %s to %s (epoch %d)", source_id, holder, owner, epoch
                )
            conn.execute(
                update(t.leases)
                .where(t.leases.c.source_id == source_id)
                .values(
                    owner=owner,
                    epoch=epoch,
                    expires_at=expires,
                    released=0,
                    takeovers=t.leases.c.takeovers + int(takeover),
                )
            )
        return Lease(source_id, owner, epoch, seconds)

    def _locked_row(self, conn: Connection, source_id: str, owner: str) -> Any:
        """The lease row, locked for this transaction; ``_RowLocked`` (after refusing a
        live holder) when PostgreSQL finds another transaction holding it."""
        postgres = conn.dialect.name == "postgresql"
        query = select(t.leases).where(t.leases.c.source_id == source_id)
        try:
            row = conn.execute(query.with_for_update(nowait=postgres)).first()
        except OperationalError as exc:
            if getattr(exc.orig, "sqlstate", None) != LOCK_NOT_AVAILABLE:
                raise
            committed = self.holder(source_id)
            if committed is None:  # its first acquisition is being committed right now
                raise _RowLocked("another process", utcnow()) from None
            _refuse_if_held(source_id, owner, *committed)
            raise _RowLocked(*committed) from None
        return None if row is None else row._mapping

    def holder(self, source_id: str) -> tuple[str, datetime] | None:
        """The committed owner and expiry of the source's lease (no lock, no wait)."""
        with self.engine.connect() as conn:
            row = conn.execute(
                select(t.leases.c.owner, t.leases.c.expires_at).where(
                    t.leases.c.source_id == source_id
                )
            ).first()
        return None if row is None else (str(row.owner), as_utc(row.expires_at))

    def check(self, lease: Lease) -> None:
        """Raise ``LeaseLost`` unless ``lease`` still holds (a read: nothing is extended)."""
        with self.engine.connect() as conn:
            row = conn.execute(
                select(t.leases.c.owner, t.leases.c.epoch).where(
                    t.leases.c.source_id == lease.source_id
                )
            ).first()
        if row is None or (row.owner, int(row.epoch)) != (lease.owner, lease.epoch):
            raise _lost(lease, None if row is None else str(row.owner))

    def takeovers(self) -> dict[str, int]:
        """Per source: how often its lease was taken over unreleased."""
        with self.engine.connect() as conn:
            rows = conn.execute(select(t.leases.c.source_id, t.leases.c.takeovers))
            return {r.source_id: int(r.takeovers) for r in rows}

    def renew(self, lease: Lease) -> bool:
        """Extend the lease; False when it was taken over (owner or epoch changed)."""
        try:
            with begin_write(self.engine) as conn:
                fence(conn, lease)
        except LeaseLost:
            return False
        return True

    def release(self, lease: Lease) -> None:
        """Expire the lease now, keeping its epoch (the token never goes backwards)."""
        with begin_write(self.engine) as conn:
            conn.execute(
                update(t.leases)
                .where(
                    t.leases.c.source_id == lease.source_id,
                    t.leases.c.owner == lease.owner,
                    t.leases.c.epoch == lease.epoch,
                )
                .values(expires_at=utcnow(), released=1)
            )


class Heartbeat:
    """Renews a lease from its own thread every third of its length until stopped.

    ``lost`` is set (and the thread ends) when a renewal finds the lease taken over; a
    renewal that fails for another reason (the database is briefly unreachable) is
    logged and tried again on the next beat.
    """

    def __init__(self, ledger: LeaseLedger, lease: Lease) -> None:
        self.ledger = ledger
        self.lease = lease
        self.period = lease.seconds / 3
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._beat, name=f"lease-{lease.source_id}", daemon=True
        )

    def start(self) -> Heartbeat:
        """Start renewing from the heartbeat's thread; returns the heartbeat."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop renewing and wait for the thread to end."""
        self._stop.set()
        self._thread.join()

    def check(self) -> None:
        """Raise ``LeaseLost`` if a heartbeat found the lease taken over."""
        if self.lost.is_set():
            raise _lost(self.lease)

    def _beat(self) -> None:
        while not self._stop.wait(self.period):
            try:
                if not self.ledger.renew(self.lease):
                    log.error("lease of %s lost to another process", self.lease.source_id)
                    self.lost.set()
                    return
            except Exception:  # a passing database fault: the next beat tries again
                log.warning("renewing the lease of %s failed", self.lease.source_id, exc_info=True)
