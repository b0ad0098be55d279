"""A fake Notion API (version 2022-06-28): search, pages, block children, users.

It follows the documented behaviour the connector uses:
- ``Authorization: Bearer <secret>`` and a required ``Notion-Version`` header (400
  ``missing_version`` without it); errors are ``{"object": "error", "status", "code",
  "message"}`` with ``unauthorized`` (401), ``restricted_resource`` (403, a capability the
  integration lacks), ``object_not_found`` (404, also for pages not shared with the
  integration), ``validation_error`` (400), ``rate_limited`` (429 with ``Retry-After`` in
  seconds): https://developers.notion.com/reference/status-codes
  https://developers.notion.com/reference/versioning
  https://developers.notion.com/reference/request-limits
- ``POST /v1/search`` with ``filter`` (``property`` = ``object``, ``value`` = ``page`` or
  ``database``), ``sort`` (``timestamp`` = ``last_edited_time``, ``direction``),
  ``page_size`` ≤ 100, ``start_cursor``; answers ``results``, ``next_cursor``, ``has_more``.
  Only pages shared with the integration are found. A cursor it did not issue (or one
  ``expire_cursors`` voided) is a ``validation_error``:
  https://developers.notion.com/reference/post-search
  https://developers.notion.com/reference/intro#pagination
- a page object (``last_edited_time`` kept to the minute, ``archived``, ``in_trash``,
  ``parent`` of type ``workspace``, ``page_id`` or ``database_id``, ``properties``):
  https://developers.notion.com/reference/page https://developers.notion.com/reference/retrieve-a-page
- a database object's ``parent`` (retrieve a database, ``GET /v1/databases/{id}``; 404
  ``object_not_found`` when not shared): https://developers.notion.com/reference/retrieve-a-database
  and the parent object: https://developers.notion.com/reference/parent-object
- block children, cursor paged, ``has_children`` for nested blocks:
  https://developers.notion.com/reference/get-block-children
- users: ``GET /v1/users`` (people with ``person.email`` when the integration may read
  emails, and bots), ``GET /v1/users/me`` (the integration's bot); without the user
  information capability ``/v1/users`` is ``restricted_resource``:
  https://developers.notion.com/reference/get-users
  https://developers.notion.com/reference/capabilities
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from fakes.confluence.server import Answer, Call, FakeApi

__all__ = ["FakeNotion", "Page"]


def minute(moment: datetime) -> str:
    """``last_edited_time`` as Notion gives it: rounded down to the minute."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:00.000Z")


def error(status: int, code: str, message: str) -> Answer:
    return Answer(status, {"object": "error", "status": status, "code": code, "message": message})


@dataclass
class Page:
    title: str
    blocks: list[dict[str, Any]]
    edited: datetime
    parent: dict[str, Any] = field(default_factory=lambda: {"type": "workspace", "workspace": True})
    properties: dict[str, Any] = field(default_factory=dict)
    archived: bool = False
    shared: bool = True
    id: str = field(default_factory=lambda: str(uuid.uuid4()))


def paragraph(
    text: str, children: list[dict[str, Any]] | None = None, kind: str = "paragraph"
) -> dict[str, Any]:
    """A block of ``kind`` with ``text`` (and nested ``children``)."""
    return {
        "object": "block",
        "id": str(uuid.uuid4()),
        "type": kind,
        "has_children": bool(children),
        kind: {"rich_text": [{"type": "text", "plain_text": text, "href": None}]},
        "_children": children or [],
    }


class FakeNotion(FakeApi):
    """``with FakeNotion() as notion: notion.add(Page(...))``."""

    def __init__(self) -> None:
        super().__init__(token="secret_test")
        self.pages: dict[str, Page] = {}
        self.people: list[dict[str, Any]] = []
        self.databases: dict[str, dict[str, Any]] = {}  # shared database id -> its parent
        self.capabilities = {"read_content", "read_user_with_email"}
        self.search_shows_archived = False
        self.rate_limited = 0
        self.retry_after = "0"
        self.search_fails_after: int | None = None  # searches answered before a 500
        self.searches = 0
        self._cursors: dict[str, int] = {}
        self._order: tuple[list[tuple[Any, ...]], list[Page]] | None = None  # _found

    def authorized(self, headers: dict[str, str]) -> bool:
        return True  # answered in `answer`, with Notion's own error body

    def add(self, page: Page) -> Page:
        with self.lock:
            self.pages[page.id] = page
        return page

    def expire_cursors(self) -> None:
        with self.lock:
            self._cursors.clear()

    def _page_json(self, page: Page) -> dict[str, Any]:
        title = {"type": "title", "id": "title",
                 "title": [{"type": "text", "plain_text": page.title, "href": None}]}  # fmt: skip
        return {
            "object": "page",
            "id": page.id,
            "created_time": minute(page.edited),
            "last_edited_time": minute(page.edited),
            "archived": page.archived,
            "in_trash": page.archived,
            "parent": page.parent,
            "properties": {"Name": title} | page.properties,
            "url": f"https://www.notion.so/{page.id.replace('-', '')}",
        }

    def answer(self, call: Call) -> Answer:
        if self.rate_limited > 0:
            self.rate_limited -= 1
            answer = error(
                429,
                "rate_limited",
                "You have been rate limited. Please try again in a few minutes.",
            )
            answer.headers["Retry-After"] = self.retry_after
            return answer
        if call.headers.get("authorization") != f"Bearer {self.token}":
            return error(401, "unauthorized", "API token is invalid.")
        if not call.headers.get("notion-version"):
            return error(
                400,
                "missing_version",
                "Notion-Version header failed validation: Notion-Version header should be defined, instead was `undefined`.",
            )
        if call.method == "POST" and call.path == "/v1/search":
            return self._search(json.loads(call.body or b"{}"))
        if call.path == "/v1/users/me":
            return Answer(200, {"object": "user", "id": "bot-1", "type": "bot", "bot": {}})
        if call.path == "/v1/users":
            if "read_user_with_email" not in self.capabilities:
                return error(
                    403, "restricted_resource", "Insufficient permissions for this endpoint."
                )
            bots = [{"object": "user", "id": "bot-1", "type": "bot", "bot": {}}]
            return self._paged(call, self.people + bots)
        if "read_content" not in self.capabilities:
            return error(403, "restricted_resource", "Insufficient permissions for this endpoint.")
        parts = call.path.split("/")
        if call.path.startswith("/v1/pages/") and len(parts) == 4:
            page = self.pages.get(parts[3])
            if page is None or not page.shared:
                return error(
                    404,
                    "object_not_found",
                    f"Could not find page with ID: {parts[3]}. Make sure the relevant pages and databases are shared with your integration.",
                )
            return Answer(200, self._page_json(page))
        if call.path.startswith("/v1/databases/") and len(parts) == 4:
            if parts[3] not in self.databases:
                return error(
                    404,
                    "object_not_found",
                    f"Could not find database with ID: {parts[3]}. Make sure the relevant pages and databases are shared with your integration.",
                )
            body = {"object": "database", "id": parts[3], "parent": self.databases[parts[3]]}
            return Answer(200, body)
        if call.path.startswith("/v1/blocks/") and parts[4:] == ["children"]:
            children = self._children(parts[3])
            if children is None:
                return error(404, "object_not_found", f"Could not find block with ID: {parts[3]}.")
            return self._paged(
                call, [{k: v for k, v in b.items() if k != "_children"} for b in children]
            )
        return error(400, "invalid_request_url", "Invalid request URL.")

    def _children(self, block_id: str) -> list[dict[str, Any]] | None:
        page = self.pages.get(block_id)
        if page is not None:
            return page.blocks if page.shared else None

        def find(blocks: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
            for block in blocks:
                if block["id"] == block_id:
                    return list(block["_children"])
                found = find(block["_children"])
                if found is not None:
                    return found
            return None

        for page in self.pages.values():
            if page.shared and (found := find(page.blocks)) is not None:
                return found
        return None

    def _cursor(self, start: int) -> str:
        token = str(uuid.uuid4())
        self._cursors[token] = start
        return token

    def _paged(self, call: Call, rows: list[Any]) -> Answer:
        size = int(call.query.get("page_size", 100))
        if size > 100:
            return error(
                400, "validation_error", "body failed validation: page_size should be ≤ `100`."
            )
        start = 0
        if "start_cursor" in call.query:
            if call.query["start_cursor"] not in self._cursors:
                return error(400, "validation_error", "start_cursor provided is invalid.")
            start = self._cursors[call.query["start_cursor"]]
        return self._list(rows, start, size)

    def _list(
        self,
        rows: list[Any],
        start: int,
        size: int,
        render: Callable[[Any], Any] = lambda row: row,
    ) -> Answer:
        """The rows ``start`` to ``start + size``, each through ``render``."""
        end = start + size
        more = end < len(rows)
        body = {"object": "list", "results": [render(row) for row in rows[start:end]],
                "has_more": more, "next_cursor": self._cursor(end) if more else None}  # fmt: skip
        return Answer(200, body)

    def _search(self, body: dict[str, Any]) -> Answer:
        self.searches += 1
        if self.search_fails_after is not None and self.searches > self.search_fails_after:
            return error(500, "internal_server_error", "Unexpected error occurred.")
        size = int(body.get("page_size", 100))
        sort = body.get("sort") or {}
        flt = body.get("filter") or {}
        if size > 100 or (sort and sort.get("timestamp") != "last_edited_time"):
            return error(
                400,
                "validation_error",
                'body failed validation: body.sort.timestamp should be `"last_edited_time"`.',
            )
        if flt and (
            flt.get("property") != "object" or flt.get("value") not in ("page", "database")
        ):
            return error(
                400,
                "validation_error",
                'body failed validation: body.filter.value should be `"page"` or `"database"`.',
            )
        if "read_content" not in self.capabilities:
            return error(403, "restricted_resource", "Insufficient permissions for this endpoint.")
        pages = self._found(descending=sort.get("direction") != "ascending")
        start = 0
        if body.get("start_cursor"):
            if body["start_cursor"] not in self._cursors:
                return error(400, "validation_error", "start_cursor provided is invalid.")
            start = self._cursors[body["start_cursor"]]
        return self._list(pages, start, size, self._page_json)

    def _found(self, *, descending: bool) -> list[Page]:
        """The pages a search finds, in its order: the shared ones (archived too when
        ``search_shows_archived``) by ``last_edited_time`` to the minute, then by id (a
        stable order within a minute, as ties are common).

        The sorted list is kept while nothing it depends on changes (which pages there
        are, their id, ``edited``, ``shared`` and ``archived``, the option and the
        direction), and a call renders only the pages it answers: the calls of one
        listing sort once, and each compares the pages' fields instead of formatting,
        sorting and rendering them all (which made a listing of N pages quadratic)."""
        state: list[tuple[Any, ...]] = [(self.search_shows_archived, descending)]
        state += [(p.id, p.edited, p.shared, p.archived) for p in self.pages.values()]
        if self._order is None or self._order[0] != state:
            pages = [
                p for p in self.pages.values()
                if p.shared and (self.search_shows_archived or not p.archived)
            ]  # fmt: skip
            pages.sort(key=lambda p: (minute(p.edited), p.id), reverse=descending)
            self._order = (state, pages)
        return self._order[1]
