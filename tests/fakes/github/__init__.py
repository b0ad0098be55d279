"""A fake GitHub REST v3 API: repos, issues and pull requests, comments, collaborators, teams.

It follows the documented behaviour the connector uses:
- list repository issues (pull requests included, marked by ``pull_request``) with
  ``state``, ``sort=updated``, ``direction``, ``since`` (updated at or after), paged by
  ``per_page``/``page`` and the ``Link`` header:
  https://docs.github.com/en/rest/issues/issues#list-repository-issues
  https://docs.github.com/en/rest/using-the-rest-api/using-pagination-in-the-rest-api
- conditional requests: an ``ETag`` on every answer; ``If-None-Match`` with the same
  ETag answers 304 with no body:
  https://docs.github.com/en/rest/using-the-rest-api/best-practices-for-using-the-rest-api#use-conditional-requests-if-appropriate
- rate limits: 403/429 with ``x-ratelimit-remaining: 0`` and ``x-ratelimit-reset``; a
  secondary limit with ``Retry-After``:
  https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api
- issue and review comments, a repo's collaborators and teams, users (``email`` is null
  when private), team members; 404 for a repo the token may not see; 401 Bad credentials:
  https://docs.github.com/en/rest/issues/comments https://docs.github.com/en/rest/pulls/comments
  https://docs.github.com/en/rest/collaborators/collaborators https://docs.github.com/en/rest/repos/repos#list-repository-teams
  https://docs.github.com/en/rest/teams/members; a repository owned by a user (``owner.type``
  ``User``) has no teams, and its teams listing answers 404, one of that endpoint's
  documented statuses
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from fakes.confluence.server import Answer, Call, FakeApi

__all__ = ["FakeGithub", "Item"]


def gh_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Item:
    number: int
    title: str
    body: str
    is_pr: bool = False
    updated: datetime = field(default_factory=lambda: datetime.now(UTC))
    comments: list[tuple[str, str]] = field(default_factory=list)  # (login, body)
    review_comments: list[tuple[str, str, str]] = field(default_factory=list)  # login, path, body


class FakeGithub(FakeApi):
    """``with FakeGithub() as gh: gh.add_repo("octo/app", private=True); gh.add(...)``."""

    def __init__(self) -> None:
        super().__init__(token="ghp_test")
        self.repos: dict[str, dict[str, Any]] = {}
        self.users: dict[str, str | None] = {}
        self.teams: dict[str, list[str]] = {}  # "org/slug" -> logins
        self.team_ids: dict[str, int] = {}  # "org/slug" -> the team's stable id
        self.primary_limited = 0  # the next n requests hit the primary rate limit
        # The next n requests hit a secondary limit that sends neither `retry-after` nor
        # `x-ratelimit-remaining: 0`, only its message (the docs: "Otherwise, wait for at
        # least one minute before retrying"):
        # https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api#exceeding-the-rate-limit
        self.secondary_limited = 0
        # Issue numbers deleted from a repo the token reads: "Get an issue" answers 410
        # Gone for them: https://docs.github.com/en/rest/issues/issues#get-an-issue
        self.gone: set[tuple[str, int]] = set()

    def team_id(self, name: str) -> int:
        """The stable id of team ``org/slug`` (given on first sight; a test may rename)."""
        return self.team_ids.setdefault(name, 1000 + len(self.team_ids))

    def authorized(self, headers: dict[str, str]) -> bool:
        return headers.get("authorization") == f"Bearer {self.token}"

    def add_repo(
        self,
        name: str,
        *,
        private: bool = False,
        collaborators: list[str] | None = None,
        teams: list[str] | None = None,
        user_owned: bool = False,
    ) -> None:
        self.repos[name] = {
            "private": private,
            "collaborators": collaborators or [],
            "teams": teams or [],
            "items": {},
            "user_owned": user_owned,
        }

    def add(self, repo: str, title: str, body: str, **kw: Any) -> int:
        with self.lock:
            items = self.repos[repo]["items"]
            number = len(items) + 1
            while number in items:
                number += 1
            items[number] = Item(number, title, body, **kw)
            return number

    def touch(self, repo: str, number: int, **changes: Any) -> None:
        with self.lock:
            item = self.repos[repo]["items"][number]
            for key, value in changes.items():
                setattr(item, key, value)
            item.updated = datetime.now(UTC)

    def content_reads(self) -> int:
        """Requests that downloaded an item's text (the item itself or its comments)."""
        pattern = r"/repos/[^/]+/[^/]+/(issues|pulls)/\d+(/comments)?"
        with self.lock:
            return sum(1 for c in self.log if re.fullmatch(pattern, c.path))

    def _dispatch(self, method: str, raw: str, headers: dict[str, str]) -> Answer:
        with self.lock:
            if self.primary_limited > 0:
                self.primary_limited -= 1
                reset = str(int(time.time()) + 1)
                self.log.append(Call(method, raw.split("?", 1)[0], {}, headers, 403))
                return Answer(
                    403,
                    {"message": "API rate limit exceeded"},
                    {"x-ratelimit-remaining": "0", "x-ratelimit-reset": reset},
                )
            if self.secondary_limited > 0:
                self.secondary_limited -= 1
                self.log.append(Call(method, raw.split("?", 1)[0], {}, headers, 403))
                message = (
                    "You have exceeded a secondary rate limit. Please wait a few minutes "
                    "before you try again."
                )
                return Answer(403, {"message": message}, {"x-ratelimit-remaining": "4999"})
        return super()._dispatch(method, raw, headers)

    def answer(self, call: Call) -> Answer:
        answer = self._route(call)
        if answer.status != 200:
            return answer
        tag = 'W/"' + hashlib.sha256(json.dumps(answer.body).encode()).hexdigest()[:20] + '"'
        answer.headers["ETag"] = tag
        if call.headers.get("if-none-match") == tag:
            return Answer(304, None, {"ETag": tag})
        return answer

    def _route(self, call: Call) -> Answer:
        path, q = call.path, call.query
        if m := re.fullmatch(r"/users/([^/]+)", path):
            if m.group(1) not in self.users:
                return Answer(404, {"message": "Not Found"})
            return Answer(body={"login": m.group(1), "email": self.users[m.group(1)]})
        if m := re.fullmatch(r"/orgs/([^/]+)/teams/([^/]+)/members", path):
            logins = self.teams.get(f"{m.group(1)}/{m.group(2)}", [])
            return self._paged(path, [{"login": x} for x in logins], q)
        m = re.fullmatch(r"/repos/([^/]+/[^/]+)(/.*)?", path)
        if m is None or m.group(1) not in self.repos:
            return Answer(404, {"message": "Not Found"})
        repo, rest = self.repos[m.group(1)], m.group(2) or ""
        if rest == "":
            private = repo["private"]
            return Answer(
                body={
                    "full_name": m.group(1),
                    "private": private,
                    "visibility": "private" if private else "public",
                    "owner": {
                        "login": m.group(1).split("/")[0],
                        "type": "User" if repo["user_owned"] else "Organization",
                    },
                }
            )
        if rest == "/collaborators":
            if not repo["private"] and not repo["collaborators"]:
                return self._paged(path, [], q)
            return self._paged(
                path,
                [{"login": x, "permissions": {"pull": True}} for x in repo["collaborators"]],
                q,
            )
        if rest == "/teams":
            if repo["user_owned"]:  # no teams: "List repository teams" answers 404
                return Answer(404, {"message": "Not Found"})
            org = m.group(1).split("/")[0]
            rows = [{"id": self.team_id(f"{org}/{t}"), "slug": t, "name": t} for t in repo["teams"]]
            return self._paged(path, rows, q)
        if rest == "/issues":
            return self._issues(m.group(1), repo, q)
        if n := re.fullmatch(r"/issues/(\d+)", rest):
            if (m.group(1), int(n.group(1))) in self.gone:
                return Answer(410, {"message": "This issue was deleted"})
            item = repo["items"].get(int(n.group(1)))
            if item is None:
                return Answer(404, {"message": "Not Found"})
            return Answer(body=self._item(m.group(1), item))
        if n := re.fullmatch(r"/issues/(\d+)/comments", rest):
            item = repo["items"].get(int(n.group(1)))
            rows = (
                []
                if item is None
                else [
                    {"user": {"login": u}, "body": b, "created_at": gh_time(item.updated)}
                    for u, b in item.comments
                ]
            )
            return self._paged(path, rows, q)
        if n := re.fullmatch(r"/pulls/(\d+)/comments", rest):
            item = repo["items"].get(int(n.group(1)))
            rows = (
                []
                if item is None
                else [
                    {
                        "user": {"login": u},
                        "path": p,
                        "body": b,
                        "created_at": gh_time(item.updated),
                    }
                    for u, p, b in item.review_comments
                ]
            )
            return self._paged(path, rows, q)
        return Answer(404, {"message": "Not Found"})

    def _item(self, repo: str, item: Item) -> dict[str, Any]:
        kind = "pull" if item.is_pr else "issues"
        row: dict[str, Any] = {
            "id": 5000 + item.number,
            "number": item.number,
            "title": item.title,
            "body": item.body,
            "state": "open",
            "updated_at": gh_time(item.updated),
            "html_url": f"https://github.com/{repo}/{kind}/{item.number}",
        }
        if item.is_pr:
            row["pull_request"] = {"url": f"{self.url}/repos/{repo}/pulls/{item.number}"}
        return row

    def _issues(self, name: str, repo: dict[str, Any], q: dict[str, str]) -> Answer:
        items = list(repo["items"].values())
        if q.get("since"):
            since = datetime.strptime(q["since"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
            items = [i for i in items if i.updated.replace(microsecond=0) >= since]
        if q.get("sort") == "updated":
            items.sort(
                key=lambda i: (i.updated.replace(microsecond=0), i.number),
                reverse=q.get("direction") == "desc",
            )
        else:
            items.sort(key=lambda i: -i.number)  # newest first, GitHub's default
        return self._paged(f"/repos/{name}/issues", [self._item(name, i) for i in items], q)

    def _paged(self, path: str, rows: list[dict[str, Any]], q: dict[str, str]) -> Answer:
        size, page = int(q.get("per_page", 30)), int(q.get("page", 1))
        body = rows[(page - 1) * size : page * size]
        headers = {}
        if page * size < len(rows):
            query = urlencode(q | {"page": str(page + 1)})
            headers["Link"] = f'<{self.url}{path}?{query}>; rel="next"'
        return Answer(body=body, headers=headers)
