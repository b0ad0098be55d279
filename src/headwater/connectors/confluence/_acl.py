"""Who may read a Confluence page: space permissions, narrowed by read restrictions.

A page's readers are its space's ``read`` permission holders (users by email, groups as
``principal_for_group`` of the group's stable id, never its name, which can be changed
and given to another group), unless the page or any ancestor carries read restrictions:
then the readers are the principals present at *every* restricted level (the page's own
restriction and each ancestor's; Confluence requires all of them). That intersection is
principal by principal, so a user allowed by a group at one level and by name at another
is left out: conservative, never wider than Confluence. Lookups are cached per connector.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from headwater.connectors._atlassian import AtlassianClient
from headwater.connectors.http import MissingAtServer
from headwater.types import Access, ListedGroup, fold_identity

SCOPE_PERMISSIONS = "read:space.permission:confluence"
SCOPE_RESTRICTIONS = "read:confluence-content.permission"
SCOPE_USERS = "read:confluence-user"
SCOPE_GROUPS = "read:confluence-groups"


def principal_for_group(source_id: str, name: str) -> str:
    """The group principal of a Confluence group, by its id (the one place that names
    groups)."""
    return f"{source_id}:group:{name}"


@dataclass(frozen=True)
class Level:
    """The principals one restricted level (a page or an ancestor) allows."""

    users: frozenset[str]
    groups: frozenset[str]


def fingerprint(access: Access) -> str:
    """A short, stable digest of an Access (stored in the checkpoint per space)."""
    text = json.dumps(access.key())
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def narrowed(space: Access, levels: list[Level]) -> Access:
    """The page's Access: the space's, or the intersection of its restricted levels."""
    if not levels:
        return space
    users = frozenset.intersection(*(level.users for level in levels))
    groups = frozenset.intersection(*(level.groups for level in levels))
    return Access(users=tuple(sorted(users)), groups=tuple(sorted(groups)))


def next_link(data: dict[str, Any], site: str) -> str | None:
    """The absolute next-page link of an answer (v1 search, v2 lists).

    v1 writes ``_links.next`` relative to ``_links.base`` (the site plus its ``/wiki``
    context), v2 from the site root (``/wiki/api/v2/...``). Without ``base`` a link is
    resolved against the site and ``_links.context`` (``/wiki``); a link that already
    starts with the context is not given it twice.
    """
    links = data.get("_links") or {}
    following = str(links.get("next") or "")
    if not following or following.startswith(("http://", "https://")):
        return following or None
    context = str(links.get("context", "/wiki")).rstrip("/")
    base = str(links.get("base") or site.rstrip("/") + context).rstrip("/")
    if context and following.startswith(context + "/") and base.endswith(context):
        base = base[: -len(context)]
    return base + following


class ConfluenceAcl:
    """Space permissions, page restrictions and group members, read through the API."""

    def __init__(self, client: AtlassianClient, source_id: str) -> None:
        self._client = client
        self._source_id = source_id
        self._emails: dict[str, str | None] = {}
        self._levels: dict[str, Level | None] = {}

    def space_access(self, space_id: str) -> Access:
        """The principals holding the space's ``read`` permission (v2 API, cursor paged)."""
        users: set[str] = set()
        groups: set[str] = set()
        public = False
        path: str | None = f"/wiki/api/v2/spaces/{space_id}/permissions"
        params: dict[str, str | int] | None = {"limit": 250}
        while path:
            # a next link carries its own query (cursor, limit): params would replace it
            data = self._client.get(path, params, scope=SCOPE_PERMISSIONS)
            params = None
            for entry in data.get("results", []):
                if entry.get("operation", {}).get("key") != "read":
                    continue
                principal = entry.get("principal", {})
                kind, ident = principal.get("type"), str(principal.get("id", ""))
                if kind == "user":
                    email = self.email_of(ident)
                    if email:
                        users.add(email)
                elif kind == "group" and ident:
                    groups.add(principal_for_group(self._source_id, ident))
                elif kind == "anonymous":
                    public = True
            path = next_link(data, self._client.base_url)
        return Access(users=tuple(sorted(users)), groups=tuple(sorted(groups)), public=public)

    def levels(self, content: Mapping[str, Any]) -> list[Level]:
        """The restricted levels of a search result: its own (inline) and its ancestors'."""
        found: list[Level] = []
        own = self._level(content.get("restrictions", {}).get("read", {}))
        if own is not None:
            found.append(own)
        for ancestor in content.get("ancestors", []):
            level = self._ancestor_level(str(ancestor["id"]))
            if level is not None:
                found.append(level)
        return found

    def _ancestor_level(self, content_id: str) -> Level | None:
        if content_id not in self._levels:
            path = f"/wiki/rest/api/content/{content_id}/restriction/byOperation/read"
            try:
                data = self._client.get(
                    path,
                    {"expand": "restrictions.user,restrictions.group"},
                    scope=SCOPE_RESTRICTIONS,
                )
            except MissingAtServer:
                data = {}
            self._levels[content_id] = self._level(data)
        return self._levels[content_id]

    def _level(self, read: Mapping[str, Any]) -> Level | None:
        restrictions = read.get("restrictions", {})
        user_rows = restrictions.get("user", {}).get("results", [])
        group_rows = restrictions.get("group", {}).get("results", [])
        if not user_rows and not group_rows:
            return None
        users = set()
        for row in user_rows:
            email = row.get("email") or self.email_of(str(row.get("accountId", "")))
            if email:
                users.add(fold_identity(str(email), "user"))
        # A restricting group is named by its id; one answered without an id grants nobody.
        groups = {
            principal_for_group(self._source_id, str(row["id"]))
            for row in group_rows
            if row.get("id")
        }
        return Level(frozenset(users), frozenset(groups))

    def email_of(self, account_id: str) -> str | None:
        """The account's email, or None when the user hides it (then it matches nobody)."""
        if account_id not in self._emails:
            try:
                data = self._client.get(
                    "/wiki/rest/api/user", {"accountId": account_id}, scope=SCOPE_USERS
                )
            except MissingAtServer:
                data = {}
            email = data.get("email") or None
            # folded where valid (levels are intersected by email); a refused one is kept
            # as written, for the gate to refuse with its page
            self._emails[account_id] = fold_identity(str(email), "user") if email else None
        return self._emails[account_id]

    def groups(self) -> Iterator[ListedGroup]:
        """Every group of the site with its member emails, named by id (its name is the
        label), offset paged."""
        for group in self._offset_paged("/wiki/rest/api/group"):
            members = self._offset_paged(f"/wiki/rest/api/group/{group['id']}/membersByGroupId")
            emails = sorted({e for m in members if (e := self._member_email(m))})
            yield ListedGroup(
                principal_for_group(self._source_id, str(group["id"])),
                emails,
                display_name=group.get("name") or None,
            )

    def _member_email(self, member: Mapping[str, Any]) -> str | None:
        email = member.get("email")
        if email:
            return fold_identity(str(email), "user")
        return self.email_of(str(member.get("accountId", "")))

    def _offset_paged(self, path: str, limit: int = 200) -> list[dict[str, Any]]:
        """Every row of a ``start``/``limit`` list. The server may cap ``limit`` ("restricted
        by fixed system limits"): the answer's ``limit`` and ``_links.next`` say whether
        a short page is the last one."""
        rows: list[dict[str, Any]] = []
        start = 0
        while True:
            data = self._client.get(path, {"start": start, "limit": limit}, scope=SCOPE_GROUPS)
            page = data.get("results", [])
            rows.extend(page)
            applied = int(data.get("limit") or limit)
            more = bool((data.get("_links") or {}).get("next"))
            if not page or (len(page) < applied and not more):
                return rows
            start += len(page)
