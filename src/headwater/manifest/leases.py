"""Fenced leases: who may sync a source now, proven again inside every commit.

A lease row (source, owner, epoch, expiry) is taken by one process at a time; a lease
whose time ran out, or whose owner process is gone (same host, dead pid), is taken
over. Each acquisition or takeover increments the row's ``epoch``: the fencing token.
A ``Heartbeat`` thread renews the lease every third of its length, so a long step (a
slow enumeration, a large fetch) never lets it expire, and notices when it was lost.
Every write that certifies progress (batch commit, checkpoint, prune commit, the run's
finish) calls ``fence`` in its own transaction: the UPDATE matches only while owner and
epoch are unchanged, so a stale owner that wakes up after a takeover raises
``LeaseLost`` and its transaction rolls back. On PostgreSQL the UPDATE also row-locks
the lease, so a takeover waits for an in-flight fenced commit instead of racing it.

An acquisition is a *takeover* when the previous holder is another process that did not
release the lease (it expired unrenewed, or its process is gone): the row's ``released``
flag tells a release from an expiry, and ``takeovers`` counts them per source (the
``headwater_lease_takeovers_total`` metric). Takeovers are logged at INFO (``-v``).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import Connection, Engine, insert, select, update

from headwater.clock import as_utc, utcnow
from headwater.errors import FatalError, LeaseLost
from headwater.manifest import schema as t
from headwater.manifest.db import begin_write

log = logging.getLogger(__name__)

LEASE_SECONDS = 60


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


@dataclass(frozen=True)
class Lease:
    """A held lease: the fencing token every commit of the run carries."""

    source_id: str
    owner: str
    epoch: int
    seconds: int = LEASE_SECONDS


def _lost(lease: Lease) -> LeaseLost:
    return LeaseLost(
        f"the lease of source {lease.source_id!r} (epoch {lease.epoch}, owner {lease.owner}) "
        "was taken over by another process after it expired; this run stopped without "
        "committing. The other process resumes the run; raise [sync] lease_seconds if "
        "this process was only slow."
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
        raise _lost(lease)


class LeaseLedger:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def acquire(self, source_id: str, owner: str, seconds: int = LEASE_SECONDS) -> Lease:
        """Take the source's lease (a new epoch) or raise FatalError naming its holder."""
        now = utcnow()
        expires = now + timedelta(seconds=seconds)
        with begin_write(self.engine) as conn:
            row = conn.execute(
                select(t.leases).where(t.leases.c.source_id == source_id).with_for_update()
            ).first()
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
            m = row._mapping
            holder, until = m["owner"], as_utc(m["expires_at"])
            if holder != owner and until > now and not _owner_is_dead(holder):
                raise FatalError(
                    f"source {source_id!r} is being synced by {holder} until {until.isoformat()}; "
                    "wait for that run to finish, or stop that process."
                )
            epoch = int(m["epoch"]) + 1
            takeover = holder != owner and not m["released"]
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
        self._thread.start()
        return self

    def stop(self) -> None:
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
