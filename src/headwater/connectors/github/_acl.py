"""Who may read a repository's issues and pull requests: its visibility, or its members.

A public repository's items are public. A private (or internal) one is readable by its
collaborators (``/repos/{repo}/collaborators``) and teams (``/repos/{repo}/teams``, as
``principal_for_group(source_id, "team:{id}")``: the team's stable numeric id, never its
slug or name, which a rename changes and another team may then take). A user is named by
login, ``github:{login}`` (``login_identity``; the kind is the ``identity_kind`` option),
never by the public email a profile may show: that is the user's choice, not the
company's identity, and most users have none. ``[identity] aliases`` map a login to the
person's email at search time (docs/permissions.md), so no source is re-read when they
change; a login without an alias is a principal of its own that only ``--as github:ann``
searches as. ``groups()`` lists team members by login the same way.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

from headwater.connectors.github._client import GithubClient, MissingAtServer
from headwater.types import Access, ListedGroup, login_identity

PERM_METADATA = "Metadata: read"
PERM_ADMIN = "Administration: read"
PERM_MEMBERS = "Members: read (organization)"


def principal_for_group(source_id: str, name: str) -> str:
    """The group principal of a GitHub team ``team:{id}`` (the one place that names groups)."""
    return f"{source_id}:group:{name}"


def team_name(team: dict[str, Any]) -> str:
    """How a team is named in principals: ``team:{id}``; its slug and name are labels."""
    return f"team:{team['id']}"


def fingerprint(access: Access) -> str:
    """A short stable hash of ``access``."""
    return hashlib.sha256(json.dumps(access.key()).encode()).hexdigest()[:16]


class GithubAcl:
    """Repository visibility, collaborators, teams and team members, through the API."""

    def __init__(self, client: GithubClient, source_id: str, kind: str = "github") -> None:
        self._client = client
        self._source_id = source_id
        self._kind = kind
        self._teams: dict[str, str] = {}  # team:{id} -> "org/slug", for listing its members
        self._team_labels: dict[str, str] = {}  # team:{id} -> "org/Team Name", for people

    def repo_access(self, repo: str) -> Access:
        """Who may read ``repo``: public, or its collaborators' logins and its teams."""
        info = self._client.get(f"/repos/{repo}", permission=PERM_METADATA)
        if not info.get("private", False) and info.get("visibility", "public") == "public":
            return Access(public=True)
        rows = self._client.every(
            f"/repos/{repo}/collaborators",
            {"affiliation": "all", "per_page": 100},
            permission=PERM_METADATA,
        )
        users = {self.user(str(row["login"])) for row in rows}
        names = self._remember(repo, self._repo_teams(repo))
        groups = {principal_for_group(self._source_id, name) for name in names}
        return Access(users=tuple(sorted(users)), groups=tuple(sorted(groups)))

    def _remember(self, repo: str, teams: list[dict[str, Any]]) -> list[str]:
        org = repo.split("/", 1)[0]
        found = {team_name(team): f"{org}/{team['slug']}" for team in teams}
        self._teams.update(found)
        self._team_labels.update(
            {team_name(team): f"{org}/{team.get('name') or team['slug']}" for team in teams}
        )
        return sorted(found)

    def _repo_teams(self, repo: str) -> list[dict[str, Any]]:
        """The teams with access to the repository; none when GitHub answers 404 (one of the
        endpoint's documented answers: a repository owned by a user has no teams)."""
        try:
            return self._client.every(
                f"/repos/{repo}/teams", {"per_page": 100}, permission=PERM_ADMIN
            )
        except MissingAtServer:
            return []

    def user(self, login: str) -> str:
        """The user name of ``login``: ``github:{login}`` (the one place naming users)."""
        return login_identity(self._kind, login)

    def groups(self, repos: list[str]) -> Iterator[ListedGroup]:
        """Every team with access to the repos, with its members' logins; named by team id,
        labelled ``org/Team Name``."""
        for repo in repos:
            self._remember(repo, self._repo_teams(repo))
        for name, path in sorted(self._teams.items()):
            org, slug = path.split("/", 1)
            members = self._client.every(
                f"/orgs/{org}/teams/{slug}/members", {"per_page": 100}, permission=PERM_MEMBERS
            )
            logins = sorted({self.user(str(m["login"])) for m in members})
            yield ListedGroup(
                principal_for_group(self._source_id, name),
                logins,
                display_name=self._team_labels.get(name),
            )
