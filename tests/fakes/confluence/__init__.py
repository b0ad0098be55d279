"""A fake Confluence Cloud site: spaces, pages, blog posts, permissions, restrictions.

It follows the documented REST shapes the connector uses:
- v2 spaces and space permissions, cursor paged through ``_links.next`` relative to the
  site: https://developer.atlassian.com/cloud/confluence/rest/v2/api-group-space/ and
  https://developer.atlassian.com/cloud/confluence/rest/v2/api-group-space-permissions/
- v1 CQL content search, cursor paged through ``_links.next`` relative to
  ``_links.base`` (the ``/wiki`` context), with ``expand``:
  https://developer.atlassian.com/cloud/confluence/rest/v1/api-group-search/#api-wiki-rest-api-content-search-get
  and CQL ``lastmodified``: https://developer.atlassian.com/cloud/confluence/cql-fields/#last-modified
- v1 content by id with ``expand`` (``body.storage``, or the listing's version, space,
  ancestors and read restrictions; 404 once deleted or trashed: only ``current`` content
  is answered by default):
  https://developer.atlassian.com/cloud/confluence/rest/v1/api-group-content/#api-wiki-rest-api-content-id-get
  read restrictions by
  operation, users by accountId, groups by id and their members (offset paged):
  https://developer.atlassian.com/cloud/confluence/rest/v1/api-group-content-restrictions/
  https://developer.atlassian.com/cloud/confluence/rest/v1/api-group-users/
  https://developer.atlassian.com/cloud/confluence/rest/v1/api-group-group/
- 429 with ``Retry-After``: https://developer.atlassian.com/cloud/confluence/rate-limiting/
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from fakes.confluence.server import Answer, Call, FakeApi

__all__ = ["Content", "FakeConfluence"]


@dataclass
class Content:
    id: str
    type: str  # "page" | "blogpost"
    space: str
    title: str
    body: str
    version: int = 1
    when: datetime = field(default_factory=lambda: datetime.now(UTC))
    ancestors: list[str] = field(default_factory=list)
    read_users: list[str] = field(default_factory=list)  # account ids
    read_groups: list[str] = field(default_factory=list)  # group names


def _cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"o:{offset}".encode()).decode()


def _offset(cursor: str | None) -> int:
    return int(base64.urlsafe_b64decode(cursor.encode()).decode()[2:]) if cursor else 0


class FakeConfluence(FakeApi):
    """``with FakeConfluence() as site: site.add_space("ENG"); site.add(...)``."""

    def __init__(self) -> None:
        super().__init__()
        self.spaces: dict[str, dict[str, Any]] = {}
        self.content: dict[str, Content] = {}
        self.users: dict[str, str] = {}  # accountId -> email
        self.groups: dict[str, tuple[str, list[str]]] = {}  # id -> (name, accountIds)
        self._next_id = 1000
        self.fail_paged_search = False  # a search page after the first answers 500
        # How the search writes `_links` (GenericLinks: base, context, next are each
        # optional): "full" (next relative to base, as Cloud answers), "no_base" (next
        # relative to the /wiki context, no base or context), "site_relative" (next from
        # the site root, /wiki included, like the v2 links):
        # https://developer.atlassian.com/cloud/confluence/rest/v1/api-group-search/#api-wiki-rest-api-content-search-get
        self.search_links = "full"
        # The most rows a list (groups, members, space permissions) answers, whatever `limit`
        # asks: "Note, this may be restricted by fixed system limits" (the answer's `limit`
        # is the one applied): https://developer.atlassian.com/cloud/confluence/rest/v1/api-group-group/
        self.page_cap: int | None = None
        # True: v2 lists write `_links.next` relative to `_links.base` (the /wiki base), as
        # v1 does, instead of from the site root (the docs say only "the relative URL"):
        # https://developer.atlassian.com/cloud/confluence/rest/v2/api-group-space-permissions/
        self.v2_links_from_base = False

    # -- state the test mutates --------------------------------------------------------

    def add_space(self, key: str, readers: list[tuple[str, str]] | None = None) -> str:
        space_id = str(len(self.spaces) + 1)
        self.spaces[key] = {"id": space_id, "perms": list(readers or [])}
        return space_id

    def add(self, space: str, title: str, body: str, *, kind: str = "page", **kw: Any) -> str:
        with self.lock:
            self._next_id += 1
            cid = str(self._next_id)
            self.content[cid] = Content(cid, kind, space, title, body, **kw)
            return cid

    def edit(self, cid: str, body: str) -> None:
        with self.lock:
            item = self.content[cid]
            item.body, item.version, item.when = body, item.version + 1, datetime.now(UTC)

    def delete(self, cid: str) -> None:
        with self.lock:
            del self.content[cid]

    def body_reads(self) -> int:
        """How many content bodies were downloaded (GET /wiki/rest/api/content/{id})."""
        with self.lock:
            return sum(1 for c in self.log if re.fullmatch(r"/wiki/rest/api/content/\d+", c.path))

    # -- the API -------------------------------------------------------------------------

    def answer(self, call: Call) -> Answer:
        path, q = call.path, call.query
        if path == "/wiki/api/v2/spaces":
            keys = q.get("keys", "").split(",")
            rows = [{"id": s["id"], "key": k, "name": k, "type": "global"}
                    for k, s in self.spaces.items() if k in keys]  # fmt: skip
            return Answer(body={"results": rows, "_links": {}})
        if m := re.fullmatch(r"/wiki/api/v2/spaces/(\d+)/permissions", path):
            return self._permissions(m.group(1), q)
        if path == "/wiki/rest/api/content/search":
            if self.fail_paged_search and "cursor" in q:
                return Answer(500, {"message": "Internal server error"})
            return self._search(q)
        if m := re.fullmatch(r"/wiki/rest/api/content/(\d+)/restriction/byOperation/read", path):
            item = self.content.get(m.group(1))
            return Answer(body={"operation": "read", "restrictions": self._restrictions(item)})
        if m := re.fullmatch(r"/wiki/rest/api/content/(\d+)", path):
            item = self.content.get(m.group(1))
            if item is None:
                return Answer(404, {"message": f"No content found with id: {m.group(1)}"})
            expand = q.get("expand", "")
            row = self._row(item, expand)
            row.setdefault("version", {"number": item.version})
            if "body.storage" in expand:
                row["body"] = {"storage": {"value": item.body, "representation": "storage"}}
            return Answer(body=row)
        if path == "/wiki/rest/api/user":
            email = self.users.get(q.get("accountId", ""))
            if email is None:
                return Answer(404, {"message": "user not found"})
            return Answer(body={"accountId": q["accountId"], "email": email})
        if path == "/wiki/rest/api/group/by-id":
            group = self.groups.get(q.get("id", ""))
            if group is None:
                return Answer(404, {"message": "group not found"})
            return Answer(body={"type": "group", "id": q["id"], "name": group[0]})
        if path == "/wiki/rest/api/group":
            rows = [
                {"type": "group", "id": i, "name": g[0]} for i, g in sorted(self.groups.items())
            ]
            return self._offset_page(path, rows, q)
        if m := re.fullmatch(r"/wiki/rest/api/group/([^/]+)/membersByGroupId", path):
            members = self.groups.get(m.group(1), ("", []))[1]
            rows = [{"accountId": a, "email": self.users.get(a, "")} for a in members]
            return self._offset_page(path, rows, q)
        return Answer(404, {"message": f"no route {path}"})

    def _offset_page(self, path: str, rows: list[dict[str, Any]], q: dict[str, str]) -> Answer:
        start, limit = int(q.get("start", 0)), int(q.get("limit", 25))
        limit = min(limit, self.page_cap) if self.page_cap else limit
        page = rows[start : start + limit]
        body: dict[str, Any] = {"results": page, "start": start, "limit": limit,
                                "size": len(page), "_links": {}}  # fmt: skip
        if start + limit < len(rows):
            following = f"{path.removeprefix('/wiki')}?start={start + limit}&limit={limit}"
            body["_links"]["next"] = following
        return Answer(body=body)

    def _permissions(self, space_id: str, q: dict[str, str]) -> Answer:
        space = next((s for s in self.spaces.values() if s["id"] == space_id), None)
        if space is None:
            return Answer(404, {"message": "space not found"})
        rows = [{"id": str(n), "principal": {"type": kind, "id": ident},
                 "operation": {"key": "read", "targetType": "space"}}
                for n, (kind, ident) in enumerate(space["perms"])]  # fmt: skip
        rows.append({"id": "x", "principal": {"type": "user", "id": "admin-only"},
                     "operation": {"key": "delete", "targetType": "space"}})  # fmt: skip
        start, limit = _offset(q.get("cursor")), int(q.get("limit", 25))
        limit = min(limit, self.page_cap) if self.page_cap else limit
        links = {}
        if start + limit < len(rows):
            query = urlencode({"limit": limit, "cursor": _cursor(start + limit)})
            links["next"] = f"/wiki/api/v2/spaces/{space_id}/permissions?{query}"
            if self.v2_links_from_base:
                links["base"] = f"{self.url}/wiki"
                links["next"] = links["next"].removeprefix("/wiki")
        return Answer(body={"results": rows[start : start + limit], "_links": links})

    def _search(self, q: dict[str, str]) -> Answer:
        cql = q.get("cql", "")
        space = re.search(r'space = "([^"]+)"', cql)
        kinds = re.search(r"type in \(([^)]*)\)", cql)
        since = re.search(r'lastmodified >= "([^"]+)"', cql)
        if space is None or kinds is None:
            return Answer(400, {"message": f"unsupported CQL {cql!r}"})
        low = (
            datetime.strptime(since.group(1), "%Y-%m-%d %H:%M").replace(tzinfo=UTC)
            if since
            else None
        )
        items = sorted(
            (c for c in self.content.values()
             if c.space == space.group(1) and c.type in kinds.group(1).split(",")
             and (low is None or c.when >= low)),
            key=lambda c: int(c.id),
        )  # fmt: skip
        start, limit = _offset(q.get("cursor")), int(q.get("limit", 25))
        expand = q.get("expand", "")
        rows = [self._row(c, expand) for c in items[start : start + limit]]
        links = {"base": f"{self.url}/wiki", "context": "/wiki"}
        if start + limit < len(items):
            query = {k: v for k, v in q.items() if k != "cursor"} | {
                "cursor": _cursor(start + limit)
            }
            links["next"] = f"/rest/api/content/search?{urlencode(query)}"
            if self.search_links == "no_base":  # GenericLinks: every key is optional
                del links["base"], links["context"]
            elif self.search_links == "site_relative":  # as the v2 API writes its links
                links["next"] = "/wiki" + links["next"]
        return Answer(body={"results": rows, "start": start, "limit": limit,
                            "size": len(rows), "_links": links})  # fmt: skip

    def _row(self, c: Content, expand: str) -> dict[str, Any]:
        row: dict[str, Any] = {"id": c.id, "type": c.type, "status": "current", "title": c.title,
                               "_links": {"webui": f"/spaces/{c.space}/pages/{c.id}"}}  # fmt: skip
        if "version" in expand:
            when = c.when.isoformat(timespec="milliseconds").replace("+00:00", "Z")
            row["version"] = {"number": c.version, "when": when}
        if "space" in expand:
            row["space"] = {"key": c.space, "id": self.spaces[c.space]["id"]}
        if "ancestors" in expand:
            row["ancestors"] = [{"id": a, "type": "page"} for a in c.ancestors]
        if "restrictions.read" in expand:
            row["restrictions"] = {
                "read": {"operation": "read", "restrictions": self._restrictions(c)}
            }
        return row

    def group_id(self, name: str) -> str:
        """The id of the group called ``name`` (restrictions carry both)."""
        return next((i for i, (n, _) in self.groups.items() if n == name), f"id-of-{name}")

    def _restrictions(self, item: Content | None) -> dict[str, Any]:
        users = [] if item is None else item.read_users
        groups = [] if item is None else item.read_groups
        return {
            "user": {"results": [{"type": "known", "accountId": a, "email": self.users.get(a, "")}
                                 for a in users], "size": len(users)},
            "group": {"results": [{"type": "group", "name": g, "id": self.group_id(g)}
                                  for g in groups], "size": len(groups)},
        }  # fmt: skip
