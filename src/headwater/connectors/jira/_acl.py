"""Who may browse a Jira issue: the project's permission scheme, or its security level.

An issue without a security level is visible to the holders of ``BROWSE_PROJECTS`` in its
project's permission scheme; an issue with one is visible to the members of that level.
Holders resolve to principals: users by email, groups as ``principal_for_group`` of the
group's stable ``groupId`` (a holder's ``value``; one named only by ``parameter`` is looked
up by name once: "As a group's name can change, use of value is recommended"; a renamed
group keeps its documents, a new group given an old name inherits none), project
roles through their actors, ``anyone`` as public, an application role as one group
(``jira-application-role:<key>``), ``projectLead`` by the lead's email, and
``reporter``/``assignee`` per issue. Other holder types (user or group custom fields,
portal customers) grant nobody here. Lookups are cached per connector.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from headwater.connectors._atlassian import AtlassianClient
from headwater.connectors.http import MissingAtServer
from headwater.types import Access, ListedGroup

SCOPE_PROJECT = "read:jira-work"
SCOPE_USER = "read:jira-user"
SCOPE_ADMIN = "manage:jira-project"
BROWSE = "BROWSE_PROJECTS"


def principal_for_group(source_id: str, name: str) -> str:
    """The group principal of a Jira group, by its ``groupId`` (the one place that names
    groups; an application role is ``jira-application-role:<key>``)."""
    return f"{source_id}:group:{name}"


@dataclass(frozen=True)
class Grant:
    """Resolved holders: fixed principals, plus the issue's reporter/assignee if set."""

    users: frozenset[str] = frozenset()
    groups: frozenset[str] = frozenset()
    public: bool = False
    reporter: bool = False
    assignee: bool = False

    def fingerprint(self) -> str:
        """A stable text standing for this grant."""
        text = json.dumps(
            [sorted(self.users), sorted(self.groups), self.public, self.reporter, self.assignee]
        )
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def access(self, fields: Mapping[str, Any]) -> Access:
        """The access this grant gives an issue with ``fields`` (its reporter and assignee)."""
        users = set(self.users)
        for role, wanted in (("reporter", self.reporter), ("assignee", self.assignee)):
            email = (fields.get(role) or {}).get("emailAddress") if wanted else None
            if email:
                users.add(str(email))
        return Access(
            users=tuple(sorted(users)), groups=tuple(sorted(self.groups)), public=self.public
        )


@dataclass
class _Collect:
    users: set[str] = field(default_factory=set)
    groups: set[str] = field(default_factory=set)
    flags: set[str] = field(default_factory=set)

    def grant(self) -> Grant:
        return Grant(
            frozenset(self.users),
            frozenset(self.groups),
            "public" in self.flags,
            "reporter" in self.flags,
            "assignee" in self.flags,
        )


class JiraAcl:
    """Permission schemes, roles, security levels and group members, through the API."""

    def __init__(self, client: AtlassianClient, source_id: str) -> None:
        self._client = client
        self._source_id = source_id
        self._emails: dict[str, str | None] = {}
        self._levels: dict[tuple[str, str], Grant] = {}
        self._group_ids: dict[str, str] = {}  # group name -> groupId ("" when unknown)

    def project_grant(self, project: str) -> Grant:
        """The holders of Browse Projects in the project's permission scheme."""
        data = self._client.get(
            f"/rest/api/3/project/{project}/permissionscheme",
            {"expand": "permissions"},
            scope=SCOPE_ADMIN,
        )
        holders = [
            p.get("holder", {})
            for p in data.get("permissions", [])
            if p.get("permission") == BROWSE
        ]
        return self._resolve(project, holders)

    def level_grant(self, project: str, level_id: str) -> Grant:
        """The members of one issue security level (offset paged, ``isLast``)."""
        key = (project, level_id)
        if key not in self._levels:
            holders: list[Mapping[str, Any]] = []
            start = 0
            while True:
                data = self._client.get(
                    "/rest/api/3/issuesecurityschemes/level/member",
                    {"levelId": level_id, "startAt": start, "maxResults": 50},
                    scope=SCOPE_ADMIN,
                )
                values = data.get("values", [])
                holders.extend(v.get("holder", {}) for v in values)
                start += len(values)
                if data.get("isLast", True) or not values:
                    break
            self._levels[key] = self._resolve(project, holders)
        return self._levels[key]

    def _resolve(self, project: str, holders: list[Mapping[str, Any]]) -> Grant:
        found = _Collect()
        for holder in holders:
            kind = holder.get("type")
            param = str(holder.get("parameter") or holder.get("value") or "")
            if kind == "group":
                group_id = self._holder_group(holder)
                if group_id:
                    found.groups.add(principal_for_group(self._source_id, group_id))
            elif kind == "user":
                self._add_user(found, param)
            elif kind == "projectRole":
                self._add_role(found, project, param)
            elif kind == "anyone":
                found.flags.add("public")
            elif kind == "applicationRole":
                name = f"jira-application-role:{param or 'any'}"
                found.groups.add(principal_for_group(self._source_id, name))
            elif kind == "projectLead":
                lead = self._client.get(f"/rest/api/3/project/{project}", scope=SCOPE_PROJECT)
                self._add_user(found, str(lead.get("lead", {}).get("accountId", "")))
            elif kind in ("reporter", "assignee"):
                found.flags.add(str(kind))
        return found.grant()

    def _holder_group(self, holder: Mapping[str, Any]) -> str:
        """A group holder's ``groupId``: ``value``, else the expanded ``group``'s, else the id
        of the group named ``parameter`` (deprecated), looked up once; "" grants nobody."""
        group = holder.get("group") or {}
        group_id = str(holder.get("value") or group.get("groupId") or "")
        if group_id:
            return group_id
        return self.group_id(str(holder.get("parameter") or group.get("name") or ""))

    def group_id(self, name: str) -> str:
        """The ``groupId`` of the group called ``name`` ("" when there is none)."""
        if name and name not in self._group_ids:
            data = self._client.get("/rest/api/3/group/bulk", {"groupName": name}, scope=SCOPE_USER)
            rows = [g for g in data.get("values", []) if str(g.get("name")) == name]
            self._group_ids[name] = str(rows[0].get("groupId") or "") if rows else ""
        return self._group_ids.get(name, "")

    def _add_role(self, found: _Collect, project: str, role_id: str) -> None:
        role = self._client.get(
            f"/rest/api/3/project/{project}/role/{role_id}", scope=SCOPE_PROJECT
        )
        for actor in role.get("actors", []):
            if actor.get("type") == "atlassian-group-role-actor":
                group = actor.get("actorGroup", {})
                group_id = str(group.get("groupId") or "") or self.group_id(
                    str(group.get("name") or actor.get("name") or "")
                )
                if group_id:
                    found.groups.add(principal_for_group(self._source_id, group_id))
            elif actor.get("type") == "atlassian-user-role-actor":
                self._add_user(found, str(actor.get("actorUser", {}).get("accountId", "")))

    def _add_user(self, found: _Collect, account_id: str) -> None:
        email = self.email_of(account_id)
        if email:
            found.users.add(email)

    def email_of(self, account_id: str) -> str | None:
        """The account's email, or None when hidden (then the user matches nobody)."""
        if account_id not in self._emails:
            try:
                data = self._client.get(
                    "/rest/api/3/user", {"accountId": account_id}, scope=SCOPE_USER
                )
            except MissingAtServer:
                data = {}
            email = data.get("emailAddress") or None
            self._emails[account_id] = str(email) if email else None
        return self._emails[account_id]

    def groups(self) -> Iterator[ListedGroup]:
        """Every group with its member emails, named by groupId; its name is the label."""
        for group in self._paged("/rest/api/3/group/bulk", {}):
            members = self._paged("/rest/api/3/group/member", {"groupId": group["groupId"]})
            emails = {
                str(e)
                for m in members
                if (e := m.get("emailAddress") or self.email_of(m["accountId"]))
            }
            yield ListedGroup(
                principal_for_group(self._source_id, str(group["groupId"])),
                sorted(emails),
                display_name=group.get("name") or None,
            )

    def _paged(self, path: str, params: dict[str, str | int]) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        while True:
            data = self._client.get(
                path, params | {"startAt": len(rows), "maxResults": 50}, scope=SCOPE_USER
            )
            values = data.get("values", [])
            rows.extend(values)
            if data.get("isLast", True) or not values:
                return rows
