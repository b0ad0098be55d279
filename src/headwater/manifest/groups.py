"""Group memberships synced from sources: who is in which group, per source.

A connector that lists its groups (``GroupListing``) hands the whole listing to
``GroupLedger.replace``, which swaps the source's rows in one transaction: a member
removed in the source is gone from the manifest after the next listing, and a listing
that fails half way changes nothing. At search, ``groups_of(user)`` expands a caller's
email into the groups every source says they belong to. Rows are keyed by source, so
one source's listing never replaces another's; the group principal is stored as the
connector gives it (normalized). Namespacing is the connectors' job: the shipped ones
name a group ``"{source_id}:group:{id}"`` (their ``principal_for_group``), so equal names
of two sources never meet; this ledger does not check that prefix.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import Engine, delete, insert, select

from headwater.errors import ConfigError
from headwater.manifest import schema as t
from headwater.manifest.db import begin_write
from headwater.manifest.leases import Lease, fence
from headwater.types import normalize_identity

INSERT_BATCH = 500


@dataclass(frozen=True)
class SyncedGroup:
    """One group a user belongs to, and the source that said so."""

    group: str
    source_id: str


@dataclass(frozen=True)
class GroupSyncReport:
    """What one group listing wrote: groups, memberships and members that were refused."""

    source_id: str
    groups: int
    memberships: int
    rejected: tuple[str, ...] = ()
    error: str | None = None  # the listing failed; the previous memberships stand

    def as_dict(self) -> dict[str, object]:
        return {
            "source": self.source_id,
            "groups": self.groups,
            "memberships": self.memberships,
            "rejected": list(self.rejected),
            "error": self.error,
        }


def _rows(
    source_id: str, listing: Iterable[tuple[str, list[str]]]
) -> tuple[set[tuple[str, str]], set[str], list[str]]:
    """Normalized (group, member) pairs; an identity that could pass as another is refused."""
    pairs: set[tuple[str, str]] = set()
    groups: set[str] = set()
    rejected: list[str] = []
    for group, members in listing:
        try:
            name = normalize_identity(group, "group")
        except ConfigError as exc:
            rejected.append(str(exc))
            continue
        groups.add(name)
        for member in members:
            try:
                pairs.add((name, normalize_identity(member, "user")))
            except ConfigError as exc:
                rejected.append(str(exc))
    return pairs, groups, rejected


class GroupLedger:
    """The ``group_members`` table."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def replace(
        self,
        source_id: str,
        listing: Iterable[tuple[str, list[str]]],
        *,
        lease: Lease | None = None,
    ) -> GroupSyncReport:
        """Make the source's memberships exactly ``listing``, in one transaction.

        The listing is consumed before the transaction starts, so an exception raised by
        the connector while listing leaves the previous memberships untouched.
        """
        pairs, groups, rejected = _rows(source_id, listing)
        ordered = sorted(pairs)
        with begin_write(self.engine) as conn:
            if lease is not None:
                fence(conn, lease)
            conn.execute(delete(t.group_members).where(t.group_members.c.source_id == source_id))
            for start in range(0, len(ordered), INSERT_BATCH):
                conn.execute(
                    insert(t.group_members),
                    [
                        {"source_id": source_id, "group_principal": g, "member": m}
                        for g, m in ordered[start : start + INSERT_BATCH]
                    ],
                )
        return GroupSyncReport(source_id, len(groups), len(ordered), tuple(rejected))

    def groups_of(self, user: str) -> list[SyncedGroup]:
        """Every synced group of ``user`` (an email, compared normalized), all sources."""
        member = normalize_identity(user, "user")
        query = (
            select(t.group_members.c.group_principal, t.group_members.c.source_id)
            .where(t.group_members.c.member == member)
            .order_by(t.group_members.c.source_id, t.group_members.c.group_principal)
        )
        with self.engine.connect() as conn:
            return [SyncedGroup(str(g), str(s)) for g, s in conn.execute(query)]

    def members(self, source_id: str) -> dict[str, list[str]]:
        """The source's groups and their members, as last synced."""
        query = (
            select(t.group_members.c.group_principal, t.group_members.c.member)
            .where(t.group_members.c.source_id == source_id)
            .order_by(t.group_members.c.group_principal, t.group_members.c.member)
        )
        found: dict[str, list[str]] = {}
        with self.engine.connect() as conn:
            for group, member in conn.execute(query):
                found.setdefault(str(group), []).append(str(member))
        return found
