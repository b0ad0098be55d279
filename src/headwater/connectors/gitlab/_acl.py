"""Who may read a GitLab project: its visibility, its members, its groups.

A ``public`` project is public (``internal`` too when ``internal_as_public`` is set: every
signed-in user of the instance reads it; else it is treated as private). A private
project is readable by its direct members with at least the Reporter role (access level
20; Guests cannot read code), and by the members of its namespace group and of the
groups it is shared with at Reporter or above, as group principals
``principal_for_group(source_id, "group:{id}")``: the group's numeric id, never its path,
which a rename or transfer changes.

GitLab's inheritance runs down the tree: a parent group's members are members of each of
its subgroups and their projects. In ``groups()`` a group therefore names its *parent*
among its nested groups (``ListedGroup.subgroups``: groups whose members are this
group's members too), so expansion at search walks up to every ancestor. A member is
named by username, ``gitlab:{username}`` (``login_identity``; the kind is the
``identity_kind`` option), and also by the account's ``email`` where the members API
shows it (to administrators only: the instance's own record, not a guess). The profile's
``public_email`` is never used: the user picks it. ``[identity] aliases`` map a username
to the person's email at search time (docs/permissions.md).
See https://docs.gitlab.com/api/members/ and https://docs.gitlab.com/user/project/members/.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

from headwater.connectors.gitlab._client import GitlabClient, project_path
from headwater.types import Access, ListedGroup, login_identity

REPORTER = 20


def principal_for_group(source_id: str, name: str) -> str:
    """The group principal of a GitLab group ``group:{id}`` (the one place naming groups)."""
    return f"{source_id}:group:{name}"


def fingerprint(access: Access) -> str:
    """A short stable hash of ``access``."""
    return hashlib.sha256(json.dumps(access.key()).encode()).hexdigest()[:16]


class GitlabAcl:
    """Project readers and group listings, through the members API."""

    def __init__(
        self,
        client: GitlabClient,
        source_id: str,
        *,
        internal_as_public: bool,
        kind: str = "gitlab",
    ) -> None:
        self._client = client
        self._source_id = source_id
        self._internal_as_public = internal_as_public
        self._kind = kind
        self.seen_groups: set[int] = set()

    def group(self, group_id: int) -> str:
        """The principal of the group with id ``group_id``."""
        return principal_for_group(self._source_id, f"group:{group_id}")

    def project_access(self, project: str) -> Access:
        """Who may read ``project``; raises when any part cannot be read (fail closed)."""
        info = self._client.get(project_path(project))
        visibility = str(info.get("visibility", "private"))
        if visibility == "public" or (visibility == "internal" and self._internal_as_public):
            return Access(public=True)
        members = self._client.every(project_path(project) + "/members", {"per_page": 100})
        users = {name for m in members if _reads(m) for name in self.names_of(m)}
        ids: set[int] = set()
        namespace = info.get("namespace") or {}
        if namespace.get("kind") == "group":
            ids.add(int(namespace["id"]))
        for share in info.get("shared_with_groups") or []:
            if int(share.get("group_access_level", 0)) >= REPORTER:
                ids.add(int(share["group_id"]))
        self.seen_groups |= ids
        groups = {self.group(i) for i in ids}
        return Access(users=tuple(sorted(users)), groups=tuple(sorted(groups)))

    def names_of(self, member: dict[str, Any]) -> list[str]:
        """``gitlab:{username}``, and the account's email where an administrator sees it."""
        names = [login_identity(self._kind, str(member["username"]))]
        if member.get("email"):
            names.append(str(member["email"]))
        return names

    def groups(self, projects: list[str]) -> Iterator[ListedGroup]:
        """Each group granting read on the projects, and every ancestor of one, with its
        direct members (Reporter or above, by username) and its parent as a nested group."""
        for project in projects:
            self.project_access(project)
        pending, done = sorted(self.seen_groups), set[int]()
        while pending:
            gid = pending.pop(0)
            if gid in done:
                continue
            done.add(gid)
            info = self._client.get(f"/groups/{gid}")
            members = self._client.every(f"/groups/{gid}/members", {"per_page": 100})
            names = sorted({n for m in members if _reads(m) for n in self.names_of(m)})
            parent = info.get("parent_id")
            if parent is not None:
                pending.append(int(parent))
            yield ListedGroup(
                self.group(gid),
                names,
                display_name=str(info.get("full_path") or info.get("name") or gid),
                subgroups=[self.group(int(parent))] if parent is not None else [],
            )


def _reads(member: dict[str, Any]) -> bool:
    """An active member with at least the Reporter role."""
    active = member.get("state", "active") == "active"
    return active and int(member.get("access_level", 0)) >= REPORTER
