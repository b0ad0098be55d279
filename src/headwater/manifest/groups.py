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
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine, Select, Table, and_, delete, insert, literal, select

from headwater.errors import ConfigError
from headwater.manifest import schema as t
from headwater.manifest.db import begin_write
from headwater.manifest.driver_sql import driver_statement
from headwater.manifest.leases import Lease, fence
from headwater.manifest.lookups import bound_ids, in_ids
from headwater.types import ListedGroup, normalize_identity

INSERT_BATCH = 500
MAX_NESTING = 32  # levels of nested groups followed at search; deeper ones are not reached


@dataclass(frozen=True)
class SyncedGroup:
    """One group a user belongs to, the source that said so, and the group's labels.

    ``via`` is the group through which the membership holds when it is nested (the
    user is in ``via``, which is a member of ``group``); None for a direct membership.
    """

    group: str
    source_id: str
    display_name: str | None = None
    mail: str | None = None
    via: str | None = None

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


@dataclass
class _Listing:
    """A group listing, normalized: user memberships, nesting edges, labels, refusals."""

    members: set[tuple[str, str]] = field(default_factory=set)  # (group, user)
    nesting: set[tuple[str, str]] = field(default_factory=set)  # (group, member group)
    labels: Labels = field(default_factory=dict)
    rejected: list[str] = field(default_factory=list)

    def add(self, entry: ListedGroup | tuple[str, list[str]]) -> None:
        """Normalize one listed group; an identity that could pass as another is refused."""
        listed = _listed(entry)
        try:
            name = normalize_identity(listed.principal, "group")
        except ConfigError as exc:
            self.rejected.append(str(exc))
            return
        self.labels[name] = (_label(listed.display_name, 500), _label(listed.mail, 320))
        for member in listed.members:
            try:
                self.members.add((name, normalize_identity(member, "user")))
            except ConfigError as exc:
                self.rejected.append(str(exc))
        for subgroup in listed.subgroups:
            try:
                child = normalize_identity(subgroup, "group")
            except ConfigError as exc:
                self.rejected.append(str(exc))
                continue
            if child != name:
                self.nesting.add((name, child))


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


def _batches(rows: list[dict[str, object]]) -> Iterable[list[dict[str, object]]]:
    for start in range(0, len(rows), INSERT_BATCH):
        yield rows[start : start + INSERT_BATCH]


class GroupLedger:
    """The ``group_members``, ``group_nesting`` and ``group_labels`` tables."""

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
        found = _Listing()
        for entry in listing:
            found.add(entry)
        members: list[dict[str, object]] = [
            {"source_id": source_id, "group_principal": g, "member": m}
            for g, m in sorted(found.members)
        ]
        nesting: list[dict[str, object]] = [
            {"source_id": source_id, "group_principal": g, "member_group": c}
            for g, c in sorted(found.nesting)
        ]
        labelled: list[dict[str, object]] = [
            {"source_id": source_id, "group_principal": g, "display_name": n, "mail": m}
            for g, (n, m) in sorted(found.labels.items())
            if n or m
        ]
        with begin_write(self.engine) as conn:
            if lease is not None:
                fence(conn, lease)
            for table, rows in (
                (t.group_members, members),
                (t.group_nesting, nesting),
                (t.group_labels, labelled),
            ):
                conn.execute(delete(table).where(table.c.source_id == source_id))
                for batch in _batches(rows):
                    conn.execute(insert(table), batch)
        return GroupSyncReport(source_id, len(found.labels), len(members), tuple(found.rejected))

    def groups_of(self, user: str, *aliases: str) -> list[SyncedGroup]:
        """Every synced group of ``user`` (an email, compared normalized) or of one of its
        ``aliases``, all sources: direct memberships first, then the groups they are
        nested in, transitively (cycles and repeats are followed once)."""
        users = sorted({normalize_identity(u, "user") for u in (user, *aliases)})
        dialect = self.engine.dialect
        # compiled once (``driver_sql``): every search asks, and most callers have no
        # synced group, which one read on the driver's connection says; the groups of a
        # member and their parents are read again in one transaction, so the levels agree
        direct = driver_statement(dialect, "groups_of", lambda: _direct(dialect.name))
        parents = driver_statement(dialect, "group_parents", lambda: _parents(dialect.name))
        ids = {"ids": bound_ids(users, dialect.name)}
        if not direct.read(self.engine, ids):
            return []
        with self.engine.connect() as conn:
            found = _unique(direct.rows(conn, ids), set())
            seen = {g.group for g in found}
            frontier = sorted(seen)
            for _ in range(MAX_NESTING):
                if not frontier:
                    break
                level: list[SyncedGroup] = []
                for start in range(0, len(frontier), INSERT_BATCH):
                    part = bound_ids(frontier[start : start + INSERT_BATCH], dialect.name)
                    level += _unique(parents.rows(conn, {"ids": part}), seen)
                found += level
                frontier = sorted(g.group for g in level)
        return found

    def labels(self, source_id: str) -> Labels:
        """The source's labelled groups: principal → (display name, mail), as last synced."""
        gl = t.group_labels
        query = select(gl.c.group_principal, gl.c.display_name, gl.c.mail).where(
            gl.c.source_id == source_id
        )
        with self.engine.connect() as conn:
            return {str(g): (_opt(n), _opt(m)) for g, n, m in conn.execute(query)}

    def members(self, source_id: str) -> dict[str, list[str]]:
        """The source's groups and their (direct, user) members, as last synced."""
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

    def subgroups(self, source_id: str) -> dict[str, list[str]]:
        """The source's groups and the groups nested directly in each, as last synced."""
        gn = t.group_nesting
        query = (
            select(gn.c.group_principal, gn.c.member_group)
            .where(gn.c.source_id == source_id)
            .order_by(gn.c.group_principal, gn.c.member_group)
        )
        found: dict[str, list[str]] = {}
        with self.engine.connect() as conn:
            for group, child in conn.execute(query):
                found.setdefault(str(group), []).append(str(child))
        return found


def _label_columns() -> tuple[Any, Any]:
    return t.group_labels.c.display_name, t.group_labels.c.mail


def _with_labels(table: Table) -> Any:
    """``table`` left-joined to its groups' labels."""
    gl = t.group_labels
    return table.outerjoin(
        gl,
        and_(
            gl.c.source_id == table.c.source_id,
            gl.c.group_principal == table.c.group_principal,
        ),
    )


def _direct(dialect: str) -> Select[Any]:
    """The groups the users bound as ``ids`` (``lookups.in_ids``) are direct members of,
    with labels (and no child)."""
    gm = t.group_members
    return (
        select(gm.c.group_principal, gm.c.source_id, *_label_columns(), literal(None))
        .select_from(_with_labels(gm))
        .where(in_ids(gm.c.member, dialect))
        .order_by(gm.c.source_id, gm.c.group_principal)
    )


def _parents(dialect: str) -> Select[Any]:
    """The groups that the groups bound as ``ids`` are nested in, with labels and the
    child."""
    gn = t.group_nesting
    return (
        select(gn.c.group_principal, gn.c.source_id, *_label_columns(), gn.c.member_group)
        .select_from(_with_labels(gn))
        .where(in_ids(gn.c.member_group, dialect))
        .order_by(gn.c.source_id, gn.c.group_principal, gn.c.member_group)
    )


def _unique(rows: Iterable[Any], seen: set[str]) -> list[SyncedGroup]:
    """Rows as ``SyncedGroup``s, each group once (``seen`` is updated)."""
    found: list[SyncedGroup] = []
    for group, source, name, mail, via in rows:
        if str(group) in seen:
            continue
        seen.add(str(group))
        found.append(SyncedGroup(str(group), str(source), _opt(name), _opt(mail), _opt(via)))
    return found


def _opt(value: object) -> str | None:
    """A nullable column's value as ``str | None``."""
    return None if value is None else str(value)
