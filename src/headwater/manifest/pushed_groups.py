"""Group memberships pushed through the API, versioned like pushed documents.

A pushed group's version and state live in ``pushed_groups``; its members are rows of
``group_members`` and its subgroups rows of ``group_nesting`` (source = the push source),
so a search expands them exactly like the groups a connector lists, nested ones
transitively (``GroupLedger.groups_of``). Members and subgroups are one version: a push
replaces both. The version decision and the write
are one transaction: the group's row is locked (``FOR UPDATE`` on PostgreSQL, SQLite's
write lock), and two first writes of one group racing in two processes meet on the
primary key: the loser decides again from the winner's row. An older version is
``stale``; a replay of the held version is ``unchanged``; a delete keeps the row (state
``deleted``) so that an older membership arriving late is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, Engine, delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from headwater.clock import utcnow
from headwater.errors import TransientError
from headwater.manifest import schema as t
from headwater.manifest.db import begin_write
from headwater.manifest.records import ACTIVE, DELETED

ATTEMPTS = 20


@dataclass(frozen=True)
class GroupPushResult:
    """What a group push did: ``new``, ``changed``, ``unchanged``, ``deleted`` or ``stale``."""

    source_id: str
    group: str
    version: int
    status: str
    members: int = 0
    current_version: int | None = None
    name: str = ""  # the group's name as the caller gave it (``group`` is the principal)
    subgroups: int = 0

    def as_dict(self) -> dict[str, object]:
        """The result as the API answers it (``PUT /v1/groups/...``)."""
        return {
            "source": self.source_id,
            "group": self.name,
            "principal": self.group,
            "version": self.version,
            "status": self.status,
            "members": self.members,
            "groups": self.subgroups,
        }


class PushedGroups:
    """The ``pushed_groups`` table and the pushed groups' rows of ``group_members`` and
    ``group_nesting``."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def put(
        self,
        source_id: str,
        group: str,
        members: Sequence[str],
        version: int,
        subgroups: Sequence[str] = (),
    ) -> GroupPushResult:
        """Make ``group``'s members exactly ``members`` (normalized emails) and its
        subgroups exactly ``subgroups`` (group principals) at ``version``."""
        nested = sorted(set(subgroups) - {group})  # a group is always in itself
        return self._retry(source_id, group, version, (sorted(set(members)), nested))

    def delete(self, source_id: str, group: str, version: int) -> GroupPushResult:
        """Delete ``group`` at ``version``: no members; older versions are refused after."""
        return self._retry(source_id, group, version, None)

    def _retry(
        self,
        source_id: str,
        group: str,
        version: int,
        content: tuple[list[str], list[str]] | None,
    ) -> GroupPushResult:
        last: Exception | None = None
        for _ in range(ATTEMPTS):
            try:
                with begin_write(self.engine) as conn:
                    return self._apply(conn, source_id, group, version, content)
            except IntegrityError as exc:  # a concurrent first write of the group won
                last = exc
        raise TransientError(
            f"group {group!r} of {source_id!r} kept changing under this push ({ATTEMPTS} "
            f"attempts, last: {last}); send it again"
        )

    def _apply(
        self,
        conn: Connection,
        source_id: str,
        group: str,
        version: int,
        content: tuple[list[str], list[str]] | None,
    ) -> GroupPushResult:
        members, subgroups = content if content is not None else (None, [])
        pg = t.pushed_groups
        key = (pg.c.source_id == source_id) & (pg.c.group_principal == group)
        row = conn.execute(select(pg.c.version, pg.c.state).where(key).with_for_update()).first()
        current, state = (int(row[0]), str(row[1])) if row is not None else (None, None)
        stale = GroupPushResult(source_id, group, version, "stale", current_version=current)
        if current is not None and version < current:
            return stale
        if current is not None and version == current:
            if members is None and state == DELETED:
                return GroupPushResult(source_id, group, version, "unchanged")
            if members is not None and state == ACTIVE:
                return GroupPushResult(
                    source_id, group, version, "unchanged", len(members), subgroups=len(subgroups)
                )
            return stale
        values = {
            "version": version,
            "state": DELETED if members is None else ACTIVE,
            "updated_at": utcnow(),
        }
        if row is None:
            conn.execute(insert(pg).values(source_id=source_id, group_principal=group, **values))
        else:
            conn.execute(update(pg).where(key).values(**values))
        gm = t.group_members
        conn.execute(delete(gm).where(gm.c.source_id == source_id, gm.c.group_principal == group))
        if members:
            conn.execute(
                insert(gm),
                [{"source_id": source_id, "group_principal": group, "member": m} for m in members],
            )
        gn = t.group_nesting
        conn.execute(delete(gn).where(gn.c.source_id == source_id, gn.c.group_principal == group))
        if subgroups:
            conn.execute(
                insert(gn),
                [
                    {"source_id": source_id, "group_principal": group, "member_group": g}
                    for g in subgroups
                ],
            )
        if members is None:
            return GroupPushResult(source_id, group, version, "deleted")
        status = "new" if row is None or state == DELETED else "changed"
        return GroupPushResult(
            source_id, group, version, status, len(members), subgroups=len(subgroups)
        )
