"""A fake GitLab REST v4 API: projects, branches, trees, compare, files, issues, merge
requests, notes, wikis, members, groups and users, as the docs describe them.

- authentication: ``Authorization: Bearer <token>`` (personal, group or project access
  token); a bad one answers ``401 {"message": "401 Unauthorized"}``; a token without the
  ``read_api`` (or ``api``) scope answers ``403 {"error": "insufficient_scope", ...}``:
  https://docs.gitlab.com/api/rest/authentication/ and
  https://docs.gitlab.com/user/profile/personal_access_tokens/#personal-access-token-scopes
- a project by its URL-encoded path (``group%2Fapp``); one the token may not see answers
  ``404 {"message": "404 Project Not Found"}``; ``visibility``, ``namespace`` (``kind``
  ``group`` or ``user``), ``shared_with_groups`` with ``group_access_level``:
  https://docs.gitlab.com/api/projects/#get-a-single-project and
  https://docs.gitlab.com/api/rest/#namespaced-paths
- offset pagination (``page``, ``per_page`` ≤ 100) with ``X-Page``, ``X-Next-Page``,
  ``X-Per-Page`` and a ``Link`` header; keyset pagination of the repository tree
  (``pagination=keyset``, ``page_token`` in the ``rel="next"`` link). A page token the
  server cannot resolve is refused with HTTP 400 (GitLab's answer to invalid arguments):
  https://docs.gitlab.com/api/rest/#pagination and
  https://docs.gitlab.com/api/repositories/#list-repository-tree
- a branch's head commit: https://docs.gitlab.com/api/branches/#get-single-repository-branch
- compare two commits (``from``, ``to``, ``straight``) with ``diffs`` carrying
  ``old_path``, ``new_path``, ``new_file``, ``renamed_file``, ``deleted_file``; an unknown
  commit answers 404: https://docs.gitlab.com/api/repositories/#compare-branches-tags-or-commits
- a file at a ref (``content`` base64, ``blob_id``) and a blob's raw bytes:
  https://docs.gitlab.com/api/repository_files/#get-file-from-repository and
  https://docs.gitlab.com/api/repositories/#raw-blob-content
- issues and merge requests (``state=all``, ``order_by=updated_at``, ``sort``,
  ``updated_after`` = updated on or after) and their notes (``system`` notes included):
  https://docs.gitlab.com/api/issues/#list-project-issues
  https://docs.gitlab.com/api/merge_requests/#list-project-merge-requests
  https://docs.gitlab.com/api/notes/
- wiki pages with ``with_content=1``: https://docs.gitlab.com/api/wikis/
- direct members with ``access_level`` and ``state``; ``email`` only in an administrator's
  view; a group's ``parent_id``; a user's ``public_email``:
  https://docs.gitlab.com/api/members/ https://docs.gitlab.com/api/groups/#get-a-single-group
  https://docs.gitlab.com/api/users/#get-a-single-user
- rate limits: 429 with ``Retry-After``, ``RateLimit-Limit``, ``RateLimit-Remaining`` and
  ``RateLimit-Reset``, the body ``Retry later``:
  https://docs.gitlab.com/security/rate_limits/ and
  https://docs.gitlab.com/administration/settings/user_and_ip_rate_limits/#response-headers
"""

from __future__ import annotations

import base64
import hashlib
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote, urlencode

from fakes.confluence.server import Answer, Call, FakeApi

__all__ = ["FakeGitlab", "Item", "Project"]


def gl_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def blob_id(data: bytes) -> str:
    """Git's object id of a blob (GitLab's ``blob_id``)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class Item:
    iid: int
    title: str
    description: str
    state: str = "opened"
    updated: datetime = field(default_factory=lambda: datetime.now(UTC))
    notes: list[tuple[str, str, bool]] = field(default_factory=list)  # user, body, system


@dataclass
class Project:
    pid: int
    path: str
    visibility: str = "private"
    group: int | None = None  # the namespace group's id; None: a user namespace
    shares: dict[int, int] = field(default_factory=dict)  # group id -> group_access_level
    members: dict[int, int] = field(default_factory=dict)  # user id -> access_level
    commits: dict[str, dict[str, bytes]] = field(default_factory=dict)
    head: str = ""
    issues: dict[int, Item] = field(default_factory=dict)
    merge_requests: dict[int, Item] = field(default_factory=dict)
    wiki: dict[str, str] = field(default_factory=dict)


class FakeGitlab(FakeApi):
    """``with FakeGitlab() as gl: gl.add_project("acme/app"); gl.commit(...)``."""

    def __init__(self) -> None:
        super().__init__(token="glpat-test")
        self.scopes = {"read_api"}
        self.projects: dict[str, Project] = {}
        self.hidden: set[str] = set()
        self.users: dict[int, dict[str, Any]] = {}
        self.groups: dict[int, dict[str, Any]] = {}
        self.admin_view = False  # members carry `email` only for an administrator
        self.rate_limited = 0  # the next n requests answer 429
        self.retry_after = "0"
        self._tokens: dict[str, tuple[str, int]] = {}  # page token -> (ref, next index)
        self._commits = 0

    def authorized(self, headers: dict[str, str]) -> bool:
        return headers.get("authorization") == f"Bearer {self.token}"

    # -- setting up -------------------------------------------------------------------
    def add_user(self, uid: int, username: str, public_email: str | None) -> None:
        self.users[uid] = {"id": uid, "username": username, "public_email": public_email}

    def add_group(
        self, gid: int, path: str, parent: int | None = None, members: dict[int, int] | None = None
    ) -> None:
        self.groups[gid] = {"id": gid, "path": path, "parent": parent, "members": members or {}}

    def add_project(self, path: str, **kw: Any) -> Project:
        project = Project(pid=100 + len(self.projects), path=path, **kw)
        self.projects[path] = project
        return project

    def commit(self, path: str, changes: dict[str, bytes | None]) -> str:
        """A new head commit of ``path``'s default branch (None deletes a file)."""
        with self.lock:
            project = self.projects[path]
            files = dict(project.commits.get(project.head, {}))
            for name, data in changes.items():
                if data is None:
                    files.pop(name, None)
                else:
                    files[name] = data
            self._commits += 1
            sha = hashlib.sha1(f"{path}:{self._commits}".encode()).hexdigest()
            project.commits[sha] = files
            project.head = sha
            return sha

    def expire_page_tokens(self) -> None:
        with self.lock:
            self._tokens.clear()

    # -- answering --------------------------------------------------------------------
    def _faults(self, call: Call) -> Answer | None:
        if self.rate_limited > 0:
            self.rate_limited -= 1
            reset = str(int(time.time()) + 60)
            headers = {"Retry-After": self.retry_after, "RateLimit-Limit": "2000"}
            headers |= {"RateLimit-Remaining": "0", "RateLimit-Reset": reset}
            return Answer(429, b"Retry later\n", headers)
        return super()._faults(call)

    def answer(self, call: Call) -> Answer:
        if not self.scopes & {"read_api", "api"}:
            return Answer(
                403,
                {
                    "error": "insufficient_scope",
                    "error_description": "The request requires higher privileges than "
                    "provided by the access token.",
                    "scope": "api read_api",
                },
            )
        parts = call.path.removeprefix("/api/v4/").split("/")
        q = call.query
        if parts[0] == "users" and len(parts) == 2:
            user = self.users.get(int(parts[1]))
            return Answer(200, user) if user else Answer(404, {"message": "404 User Not Found"})
        if parts[0] == "groups":
            return self._group(call, parts)
        if parts[0] != "projects" or len(parts) < 2:
            return Answer(404, {"message": "404 Not Found"})
        project = self.projects.get(unquote(parts[1]))
        if project is None or project.path in self.hidden:
            return Answer(404, {"message": "404 Project Not Found"})
        rest = parts[2:]
        if not rest:
            return Answer(200, self._project_json(project))
        if rest == ["members"]:
            rows = [self._member(uid, lvl) for uid, lvl in sorted(project.members.items())]
            return self._offset(call, rows)
        if rest[:2] == ["repository", "branches"]:
            if unquote("/".join(rest[2:])) != "main" or not project.head:
                return Answer(404, {"message": "404 Branch Not Found"})
            return Answer(200, {"name": "main", "commit": {"id": project.head}})
        if rest == ["repository", "tree"]:
            return self._tree(call, project)
        if rest == ["repository", "compare"]:
            return self._compare(project, q.get("from", ""), q.get("to", ""))
        if rest[:2] == ["repository", "files"] and len(rest) == 3:
            files = project.commits.get(self._ref(project, q.get("ref", "")), {})
            name = unquote(rest[2])
            if name not in files:
                return Answer(404, {"message": "404 File Not Found"})
            data = files[name]
            return Answer(
                200,
                {
                    "file_name": name.rsplit("/", 1)[-1],
                    "file_path": name,
                    "size": len(data),
                    "encoding": "base64",
                    "content": base64.b64encode(data).decode(),
                    "blob_id": blob_id(data),
                    "ref": q.get("ref"),
                },
            )
        if rest[:2] == ["repository", "blobs"] and rest[3:] == ["raw"]:
            for files in project.commits.values():
                for data in files.values():
                    if blob_id(data) == rest[2]:
                        return Answer(200, data)
            return Answer(404, {"message": "404 Blob Not Found"})
        if rest[0] in ("issues", "merge_requests"):
            return self._items(call, project, rest)
        if rest == ["wikis"]:
            with_content = q.get("with_content") in ("1", "true")
            pages = [
                {"format": "markdown", "slug": slug, "title": slug.replace("-", " ")}
                | ({"content": text, "encoding": "UTF-8"} if with_content else {})
                for slug, text in sorted(project.wiki.items())
            ]
            return Answer(200, pages)
        return Answer(404, {"message": "404 Not Found"})

    def _ref(self, project: Project, ref: str) -> str:
        return project.head if ref == "main" else ref

    def _project_json(self, project: Project) -> dict[str, Any]:
        if project.group is not None:
            group = self.groups[project.group]
            namespace = {"id": project.group, "kind": "group", "full_path": self._path(group)}
        else:
            namespace = {"id": 1, "kind": "user", "full_path": project.path.split("/")[0]}
        return {
            "id": project.pid,
            "path_with_namespace": project.path,
            "visibility": project.visibility,
            "default_branch": "main",
            "web_url": f"{self.url}/{project.path}",
            "namespace": namespace,
            "shared_with_groups": [
                {
                    "group_id": gid,
                    "group_full_path": self._path(self.groups[gid]),
                    "group_access_level": level,
                }
                for gid, level in sorted(project.shares.items())
            ],
        }

    def _path(self, group: dict[str, Any]) -> str:
        parent = group["parent"]
        return f"{self._path(self.groups[parent])}/{group['path']}" if parent else group["path"]

    def _member(self, uid: int, level: int) -> dict[str, Any]:
        user = self.users[uid]
        row = {"id": uid, "username": user["username"], "state": user.get("state", "active")}
        row["access_level"] = level
        if self.admin_view and user.get("email"):
            row["email"] = user["email"]
        return row

    def _group(self, call: Call, parts: list[str]) -> Answer:
        group = self.groups.get(int(parts[1])) if len(parts) > 1 else None
        if group is None:
            return Answer(404, {"message": "404 Group Not Found"})
        if parts[2:] == ["members"]:
            rows = [self._member(uid, lvl) for uid, lvl in sorted(group["members"].items())]
            return self._offset(call, rows)
        info = {"id": group["id"], "name": group["path"], "full_path": self._path(group)}
        return Answer(200, info | {"parent_id": group["parent"]})

    def _offset(self, call: Call, rows: list[Any]) -> Answer:
        per_page = min(int(call.query.get("per_page", 20)), 100)
        page = int(call.query.get("page", 1))
        chunk = rows[(page - 1) * per_page : page * per_page]
        headers = {"X-Page": str(page), "X-Per-Page": str(per_page), "X-Total": str(len(rows))}
        headers["X-Next-Page"] = ""
        if page * per_page < len(rows):
            headers["X-Next-Page"] = str(page + 1)
            query = urlencode(call.query | {"page": page + 1})
            headers["Link"] = f'<{self.url}{call.path}?{query}>; rel="next"'
        return Answer(200, chunk, headers)

    def _tree(self, call: Call, project: Project) -> Answer:
        q = call.query
        ref = self._ref(project, q.get("ref", ""))
        if ref not in project.commits:
            return Answer(404, {"message": "404 Tree Not Found"})
        files = project.commits[ref]
        folders = {"/".join(p.split("/")[:n]) for p in files for n in range(1, p.count("/") + 1)}
        entries = [
            {"id": blob_id(d), "name": p.rsplit("/", 1)[-1], "type": "blob", "path": p}
            for p, d in files.items()
        ] + [{"id": "0" * 40, "name": f, "type": "tree", "path": f} for f in folders]
        entries.sort(key=lambda e: str(e["path"]))
        start = 0
        if "page_token" in q:
            known = self._tokens.get(q["page_token"])
            if known is None or known[0] != ref:
                return Answer(400, {"message": "400 Bad request - invalid page token"})
            start = known[1]
        per_page = min(int(q.get("per_page", 20)), 100)
        end = start + per_page
        headers: dict[str, str] = {}
        if end < len(entries):
            token = base64.urlsafe_b64encode(f"{ref}:{end}:{time.time_ns()}".encode()).decode()
            self._tokens[token] = (ref, end)
            query = urlencode(q | {"page_token": token})
            headers["Link"] = f'<{self.url}{call.path}?{query}>; rel="next"'
        return Answer(200, entries[start:end], headers)

    def _compare(self, project: Project, old: str, new: str) -> Answer:
        if old not in project.commits or self._ref(project, new) not in project.commits:
            return Answer(404, {"message": "404 Not Found"})
        a, b = project.commits[old], project.commits[self._ref(project, new)]
        gone = {p: d for p, d in a.items() if p not in b}
        diffs: list[dict[str, Any]] = []
        for path in sorted(set(a) | set(b)):
            if path in b and path not in a:
                source = next((o for o, d in gone.items() if d == b[path]), None)
                if source is not None:  # the same bytes under a new name: a rename
                    gone.pop(source)
                    diffs.append(_diff(source, path, renamed_file=True))
                else:
                    diffs.append(_diff(path, path, new_file=True))
            elif path in a and path in b and a[path] != b[path]:
                diffs.append(_diff(path, path))
        diffs += [_diff(path, path, deleted_file=True) for path in sorted(gone)]
        commit = {"id": self._ref(project, new)}
        return Answer(200, {"commit": commit, "diffs": diffs, "compare_timeout": False})

    def _items(self, call: Call, project: Project, rest: list[str]) -> Answer:
        kind = rest[0]
        items: dict[int, Item] = getattr(project, kind)
        if len(rest) == 1:
            rows = list(items.values())
            if "updated_after" in call.query:
                after = datetime.fromisoformat(call.query["updated_after"].replace("Z", "+00:00"))
                rows = [i for i in rows if i.updated >= after]
            if call.query.get("order_by") == "updated_at":
                rows.sort(key=lambda i: (i.updated, i.iid))
            else:
                rows.sort(key=lambda i: i.iid)
            if call.query.get("sort", "desc") == "desc":
                rows.reverse()
            return self._offset(call, [self._item(project, kind, i) for i in rows])
        item = items.get(int(rest[1]))
        if item is None:
            return Answer(404, {"message": "404 Not found"})
        if rest[2:] == ["notes"]:
            notes = [
                {"id": n, "body": body, "system": system, "author": {"username": user},
                 "created_at": gl_time(item.updated)}
                for n, (user, body, system) in enumerate(item.notes, 1)
            ]  # fmt: skip
            return self._offset(call, notes)
        return Answer(200, self._item(project, kind, item))

    def _item(self, project: Project, kind: str, item: Item) -> dict[str, Any]:
        return {
            "iid": item.iid,
            "project_id": project.pid,
            "title": item.title,
            "description": item.description,
            "state": item.state,
            "updated_at": gl_time(item.updated),
            "web_url": f"{self.url}/{project.path}/-/{kind}/{item.iid}",
        }


def _diff(old: str, new: str, **flags: bool) -> dict[str, Any]:
    row: dict[str, Any] = {"old_path": old, "new_path": new, "a_mode": "100644"}
    row |= {"new_file": False, "renamed_file": False, "deleted_file": False, "diff": ""}
    return row | flags
