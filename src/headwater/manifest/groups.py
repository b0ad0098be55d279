"""Group memberships synced from sources: who is in which group, per source.

A connector that lists its groups (``GroupListing``) hands the whole listing to
``GroupLedger.replace``, which swaps the source's rows in one transaction: a member
removed in the source is gone from the manifest after the next listing, and a listing
that fails half way changes nothing. At search, ``groups_of(user)`` expands a caller's
email into the groups every source says they belong to. Rows are keyed by source, so
one source's listing never replaces another's; the group principal is stored as the
connector gives it (normalized). Namespacing is the connectors' job: the shipped ones
name a group ``"{source_id}:group:{id}"`` (their ``principal_for_group``), so equal names
of two sources never meet; this ledger does not check that prefix. Each group's display
name and mail (``group_labels``) are stored beside it, replaced in the same transaction,
and only ever shown (``search --explain``): a group is matched by its stable principal.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import Engine, and_, delete, insert, select

from headwater.errors import ConfigError
from headwater.manifest import schema as t
from headwater.manifest.db import begin_write
from headwater.manifest.leases import Lease, fence
from headwater.types import ListedGroup, normalize_identity

INSERT_BATCH = 500


@dataclass(frozen=True)
class SyncedGroup:
    """One group a user belongs to, the source that said so, and the group's labels."""

    group: str
    source_id: str
    display_name: str | None = None
    mail: str | None = None

    @property
    def label(self) -> str:
        """The group as a person reads it: ``Display Name <mail>``, or its principal."""
        name = self.display_name or ""
        mail = f"<{self.mail}>" if self.mail else ""
        return " ".join(part for part in (name, mail) if part) or self.group


Labels = dict[str, tuple[str | None, str | None]]


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


def _label(value: str | None, limit: int) -> str | None:
    """A label as stored: control characters out, blank as None, cut to the column."""
    if value is None:
        return None
    text = "".join(ch if ch.isprintable() else " " for ch in str(value)).strip()
    return text[:limit] or None


def _listed(entry: ListedGroup | tuple[str, list[str]]) -> ListedGroup:
    """A listing entry as a ``ListedGroup`` (older connectors yield plain pairs)."""
    if isinstance(entry, ListedGroup):
        return entry
    group, members = entry
    return ListedGroup(group, members)


def _rows(
    source_id: str, listing: Iterable[ListedGroup | tuple[str, list[str]]]
) -> tuple[set[tuple[str, str]], Labels, list[str]]:
    """Normalized (group, member) pairs and each group's labels; an identity that could
    pass as another is refused."""
    pairs: set[tuple[str, str]] = set()
    groups: Labels = {}
    rejected: list[str] = []
    for entry in listing:
        listed = _listed(entry)
        try:
            name = normalize_identity(listed.principal, "group")
        except ConfigError as exc:
            rejected.append(str(exc))
            continue
        groups[name] = (_label(listed.display_name, 500), _label(listed.mail, 320))
        members = listed.members
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
        listing: Iterable[ListedGroup | tuple[str, list[str]]],
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
            conn.execute(delete(t.group_labels).where(t.group_labels.c.source_id == source_id))
            labelled = [
                {"source_id": source_id, "group_principal": g, "display_name": n, "mail": m}
                for g, (n, m) in sorted(groups.items())
                if n or m
            ]
            for start in range(0, len(labelled), INSERT_BATCH):
                conn.execute(insert(t.group_labels), labelled[start : start + INSERT_BATCH])
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
        gm, gl = t.group_members, t.group_labels
        query = (
            select(gm.c.group_principal, gm.c.source_id, gl.c.display_name, gl.c.mail)
            .select_from(
                gm.outerjoin(
                    gl,
                    and_(
                        gl.c.source_id == gm.c.source_id,
                        gl.c.group_principal == gm.c.group_principal,
                    ),
                )
            )
            .where(gm.c.member == member)
            .order_by(gm.c.source_id, gm.c.group_principal)
        )
        with self.engine.connect() as conn:
            return [
                SyncedGroup(str(g), str(s), _opt(name), _opt(mail))
                for g, s, name, mail in conn.execute(query)
            ]

    def labels(self, source_id: str) -> Labels:
        """The source's labelled groups: principal → (display name, mail), as last synced."""
        gl = t.group_labels
        query = select(gl.c.group_principal, gl.c.display_name, gl.c.mail).where(
            gl.c.source_id == source_id
        )
        with self.engine.connect() as conn:
            return {str(g): (_opt(n), _opt(m)) for g, n, m in conn.execute(query)}

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


def _opt(value: object) -> str | None:
    """A nullable column's value as ``str | None``."""
    return None if value is None else str(value)
