"""A fake Jira Cloud site: projects, issues, comments, permission schemes, security levels.

It follows the documented REST v3 shapes the connector uses:
- enhanced JQL search, paged by ``nextPageToken`` / ``isLast``:
  https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issue-search/#api-rest-api-3-search-jql-get
- JQL ``updated`` compared in minutes (``"yyyy/MM/dd HH:mm"``):
  https://support.atlassian.com/jira-software-cloud/docs/jql-fields/#Updated
- issues by id with ``fields`` (404 once deleted or moved out of the account's reach),
  JQL ``id = N`` (https://support.atlassian.com/jira-software-cloud/docs/jql-fields/#Issue-key), comments offset paged (``startAt``/``total``), ADF
  bodies: https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issues/
  https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issue-comments/
- a project's permission scheme with ``expand=permissions`` (holder type/parameter),
  project roles with actors, security level members (``isLast`` paged):
  https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-project-permission-schemes/
  https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-project-roles/
  https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issue-security-level/
- users by accountId, groups and members:
  https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-groups/
- 429 with ``Retry-After``: https://developer.atlassian.com/cloud/jira/platform/rate-limiting/
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from fakes.confluence.server import Answer, Call, FakeApi

__all__ = ["FakeJira", "Issue", "adf"]


def adf(text: str) -> dict[str, Any]:
    """A one-paragraph ADF document."""
    paragraph = {"type": "paragraph", "content": [{"type": "text", "text": text}]}
    return {"type": "doc", "version": 1, "content": [paragraph]}


def jira_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "+0000"


@dataclass
class Issue:
    id: str
    key: str
    project: str
    summary: str
    description: str
    issuetype: str = "Task"
    updated: datetime = field(default_factory=lambda: datetime.now(UTC))
    comments: list[tuple[str, str]] = field(default_factory=list)  # (author, text)
    security: str | None = None  # level id
    reporter: str | None = None  # account id
    assignee: str | None = None


class FakeJira(FakeApi):
    """``with FakeJira() as site: site.add_project("ENG", browse=[...]); site.add(...)``."""

    def __init__(self) -> None:
        super().__init__()
        self.projects: dict[str, dict[str, Any]] = {}
        self.issues: dict[str, Issue] = {}
        self.levels: dict[str, list[dict[str, str]]] = {}
        self.users: dict[str, str] = {}
        self.groups: dict[str, tuple[str, list[str]]] = {}
        self.fail_paged_search = False  # a search page after the first answers 500
        # The documented search response (SearchAndReconcileResults) has no `isLast`: the
        # last page is the one without `nextPageToken` (left out, not null: JRACLOUD-92184).
        # True: answer that shape, with no `isLast` at all.
        # https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issue-search/#api-rest-api-3-search-jql-get
        self.omit_is_last = False
        self._next = 10000

    def add_project(self, key: str, browse: list[dict[str, str]], lead: str = "") -> None:
        self.projects[key] = {"id": str(100 + len(self.projects)), "browse": browse,
                              "lead": lead, "roles": {}, "count": 0}  # fmt: skip

    def add(self, project: str, summary: str, description: str, **kw: Any) -> str:
        with self.lock:
            self._next += 1
            info = self.projects[project]
            info["count"] += 1
            issue = Issue(str(self._next), f"{project}-{info['count']}", project, summary,
                          description, **kw)  # fmt: skip
            self.issues[issue.id] = issue
            return issue.id

    def touch(self, issue_id: str, **changes: Any) -> None:
        with self.lock:
            issue = self.issues[issue_id]
            for name, value in changes.items():
                setattr(issue, name, value)
            issue.updated = datetime.now(UTC)

    def comment(self, issue_id: str, author: str, text: str) -> None:
        with self.lock:
            self.issues[issue_id].comments.append((author, text))
            self.issues[issue_id].updated = datetime.now(UTC)  # a comment moves `updated`

    def content_reads(self) -> int:
        """Requests that downloaded an issue's description or comments."""
        with self.lock:
            return sum(
                1 for c in self.log if re.fullmatch(r"/rest/api/3/issue/\d+(/comment)?", c.path)
            )

    # -- the API -------------------------------------------------------------------------

    def answer(self, call: Call) -> Answer:
        path, q = call.path, call.query
        if path == "/rest/api/3/search/jql":
            if self.fail_paged_search and q.get("nextPageToken"):
                return Answer(500, {"errorMessages": ["Internal server error"]})
            return self._search(q)
        if m := re.fullmatch(r"/rest/api/3/project/([^/]+)", path):
            info = self.projects.get(m.group(1))
            if info is None:
                return Answer(
                    404, {"errorMessages": [f"No project could be found with key '{m.group(1)}'."]}
                )
            return Answer(
                body={"id": info["id"], "key": m.group(1), "lead": {"accountId": info["lead"]}}
            )
        if m := re.fullmatch(r"/rest/api/3/project/([^/]+)/permissionscheme", path):
            info = self.projects[m.group(1)]
            perms = [{"id": n, "holder": h, "permission": "BROWSE_PROJECTS"}
                     for n, h in enumerate(info["browse"])]  # fmt: skip
            perms.append({"id": 99, "holder": {"type": "group", "parameter": "admins"},
                          "permission": "ADMINISTER_PROJECTS"})  # fmt: skip
            return Answer(body={"id": 10000, "name": "Default", "permissions": perms})
        if m := re.fullmatch(r"/rest/api/3/project/([^/]+)/role/(\d+)", path):
            actors = self.projects[m.group(1)]["roles"].get(m.group(2), [])
            return Answer(body={"id": int(m.group(2)), "name": "Role", "actors": actors})
        if path == "/rest/api/3/issuesecurityschemes/level/member":
            holders = self.levels.get(q.get("levelId", ""), [])
            start, size = int(q.get("startAt", 0)), int(q.get("maxResults", 50))
            page = holders[start : start + size]
            return Answer(body={"values": [{"id": str(i), "issueSecurityLevelId": q["levelId"], "holder": h}
                                           for i, h in enumerate(page)],
                                "startAt": start, "maxResults": size, "total": len(holders),
                                "isLast": start + size >= len(holders)})  # fmt: skip
        if path == "/rest/api/3/user":
            email = self.users.get(q.get("accountId", ""))
            if email is None:
                return Answer(404, {"errorMessages": ["user not found"]})
            return Answer(body={"accountId": q["accountId"], "emailAddress": email})
        if m := re.fullmatch(r"/rest/api/3/issue/(\d+)", path):
            issue = self.issues.get(m.group(1))
            if issue is None:
                return Answer(404, {"errorMessages": ["Issue does not exist"]})
            wanted = set(q.get("fields", "summary,description").split(","))
            return Answer(body={"id": issue.id, "key": issue.key,
                                "fields": self._fields(issue, wanted)})  # fmt: skip
        if m := re.fullmatch(r"/rest/api/3/issue/(\d+)/comment", path):
            issue = self.issues.get(m.group(1))
            if issue is None:
                return Answer(404, {"errorMessages": ["Issue does not exist"]})
            start, size = int(q.get("startAt", 0)), int(q.get("maxResults", 50))
            rows = [{"id": str(n), "author": {"displayName": a}, "body": adf(t),
                     "created": jira_time(issue.updated)} for n, (a, t) in enumerate(issue.comments)]  # fmt: skip
            return Answer(body={"comments": rows[start : start + size], "startAt": start,
                                "maxResults": size, "total": len(rows)})  # fmt: skip
        if path == "/rest/api/3/group/bulk":
            rows = [{"groupId": i, "name": g[0]} for i, g in sorted(self.groups.items())
                    if q.get("groupId") in (None, i) and q.get("groupName") in (None, g[0])]  # fmt: skip
            return self._paged(rows, q)
        if path == "/rest/api/3/group/member":
            members = self.groups.get(q.get("groupId", ""), ("", []))[1]
            return self._paged(
                [{"accountId": a, "emailAddress": self.users.get(a)} for a in members], q
            )
        return Answer(404, {"errorMessages": [f"no route {path}"]})

    def _paged(self, rows: list[dict[str, Any]], q: dict[str, str]) -> Answer:
        start, size = int(q.get("startAt", 0)), int(q.get("maxResults", 50))
        return Answer(body={"values": rows[start : start + size], "startAt": start,
                            "isLast": start + size >= len(rows)})  # fmt: skip

    def _search(self, q: dict[str, str]) -> Answer:
        jql = q.get("jql", "")
        rest = re.fullmatch(r'project = "([^"]+)"(.*) ORDER BY key ASC', jql)
        if rest is None:
            return Answer(400, {"errorMessages": [f"Error in the JQL Query: {jql!r}"]})
        project, tail = rest.group(1), rest.group(2)
        kind = re.search(r"AND \(issuetype = (\w+)\)", tail)
        since = re.search(r'AND updated >= "([^"]+)"', tail)
        only = re.search(r"AND id = (\d+)", tail)
        leftover = re.sub(r'AND \(issuetype = \w+\)|AND updated >= "[^"]+"|AND id = \d+', "",
                          tail).strip()  # fmt: skip
        if leftover:
            return Answer(400, {"errorMessages": [f"Error in the JQL Query: {leftover!r}"]})
        low = (
            datetime.strptime(since.group(1), "%Y/%m/%d %H:%M").replace(tzinfo=UTC)
            if since
            else None
        )
        found = sorted(
            (i for i in self.issues.values() if i.project == project
             and (kind is None or i.issuetype == kind.group(1))
             and (low is None or i.updated >= low)
             and (only is None or i.id == only.group(1))),
            key=lambda i: int(i.key.split("-")[1]),
        )  # fmt: skip
        start = int(q.get("nextPageToken") or 0)
        size = int(q.get("maxResults", 50))
        wanted = set(q.get("fields", "").split(","))
        issues = [{"id": i.id, "key": i.key, "fields": self._fields(i, wanted)}
                  for i in found[start : start + size]]  # fmt: skip
        body: dict[str, Any] = {"issues": issues, "isLast": start + size >= len(found)}
        if not body["isLast"]:
            body["nextPageToken"] = str(start + size)
        if self.omit_is_last:
            del body["isLast"]
        return Answer(body=body)

    def _fields(self, issue: Issue, wanted: set[str]) -> dict[str, Any]:
        def user(account: str | None) -> dict[str, Any] | None:
            if account is None:
                return None
            return {"accountId": account, "emailAddress": self.users.get(account)}

        every = {
            "summary": issue.summary, "updated": jira_time(issue.updated),
            "project": {"key": issue.project, "id": self.projects[issue.project]["id"]},
            "security": {"id": issue.security, "name": f"level {issue.security}"} if issue.security else None,
            "reporter": user(issue.reporter), "assignee": user(issue.assignee),
            "issuetype": {"name": issue.issuetype}, "description": adf(issue.description),
        }  # fmt: skip
        return {k: v for k, v in every.items() if k in wanted}
