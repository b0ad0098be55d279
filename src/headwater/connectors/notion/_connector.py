"""The Notion connector: the pages (database rows included) shared with an integration.

Pages are listed with ``POST /v1/search`` (``filter`` object = page, ``sort``
``last_edited_time`` descending, cursor paged by ``start_cursor``/``next_cursor``), with
a checkpoint after every page of results. After the first run the listing stops at the
first page edited before the newest ``last_edited_time`` seen minus ``window_overlap``
(Notion keeps that time to the minute, so the overlap re-lists the boundary). A page
whose minute may still take edits (edited within ``OPEN_FOR`` of the read) cannot be
proved unchanged by that time: its version carries the read time, so every run reads it
again (the checksum gate skips what did not change), and the saved bound stays at or
before its minute until a run sees that minute closed. A saved cursor Notion refuses
(``validation_error``) lists again from the top. Text is fetched lazily: the page (for a
row's properties) and its block tree, rendered to Markdown.
Archived or trashed pages in the listing are ``Deleted``; pages trashed or unshared are
seen by ``enumerate()`` (a full search). The API exposes no page permissions: documents
get the source's ``access``; ``groups()`` lists the workspace's members as one group,
``{source}:group:workspace``, for an ``access`` that names it. A page's ``hierarchy`` is
the ids (32 hex digits, as in its URL) of the pages and databases above it, top first,
then its own: each ``parent`` read up (``/v1/pages/{id}``, ``/v1/databases/{id}``, once
per id and run) up to the workspace or a block; an ancestor not shared with the
integration is the top. See docs/connectors/notion.md.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any, ClassVar

from pydantic import Field, field_validator

from headwater.clock import as_utc, utcnow
from headwater.connectors._bearer import BearerApiOptions
from headwater.connectors._governed import governed_transport
from headwater.connectors.base import ConnectorCapabilities, ReadStream, SourceContext
from headwater.connectors.notion._client import (
    READ_USERS,
    BadRequest,
    MissingAtServer,
    NotionClient,
)
from headwater.connectors.notion._render import block_lines, page_markdown, title_of
from headwater.errors import ConfigError, ItemError, TransientError
from headwater.retry import RetryPolicy
from headwater.scopes import HIERARCHY_KEY
from headwater.scopes import MAX_DEPTH as MAX_PATH
from headwater.types import (
    Checkpoint,
    Deleted,
    KnownVersions,
    ListedGroup,
    SourceDocument,
    Window,
)
from headwater.units import parse_duration

MAX_DEPTH = 8  # nested blocks deeper than this are not read
# A `last_edited_time` minute counts as open (more edits may come inside it, invisible in
# the minute-rounded time) until this long after its start: the minute, plus a minute of
# clock difference between Notion and this host.
OPEN_FOR = timedelta(minutes=2)


def principal_for_group(source_id: str, name: str) -> str:
    """The group principal of the Notion group ``name`` (``workspace``)."""
    return f"{source_id}:group:{name}"


def _time(value: str | None) -> datetime | None:
    return as_utc(datetime.fromisoformat(value.replace("Z", "+00:00"))) if value else None


class NotionOptions(BearerApiOptions):
    """The keys of a ``notion`` source."""

    base_url: str = Field(default="https://api.notion.com", pattern=r"^https?://")
    notion_version: str = Field(default="2022-06-28", pattern=r"^\d{4}-\d{2}-\d{2}$")
    window_overlap: str = "2m"
    page_size: int = Field(default=100, ge=1, le=100)

    @field_validator("window_overlap")
    @classmethod
    def _duration(cls, value: str) -> str:
        try:
            parse_duration(value)
        except (ValueError, ConfigError) as exc:
            raise ValueError(f'window_overlap {value!r} is not a duration, e.g. "2m"') from exc
        return value


class NotionConnector:
    """Reads the pages shared with a Notion integration."""

    type_name: ClassVar[str] = "notion"
    capabilities: ClassVar[ConnectorCapabilities] = ConnectorCapabilities()
    Options: ClassVar[type[NotionOptions]] = NotionOptions

    def __init__(self, options: NotionOptions, context: SourceContext) -> None:
        self.options = options
        self._source_id = context.source_id
        self._overlap = parse_duration(options.window_overlap) or timedelta(0)
        self._client = NotionClient(
            options.base_url.rstrip("/"),
            token=options.token.get_secret_value(),
            version=options.notion_version,
            timeout=options.timeout,
            user_agent=context.user_agent,
            transport=governed_transport(context, "notion", options.token.get_secret_value()),
            policy=options.retry_policy(),
        )
        self._parents: dict[str, dict[str, Any]] = {}  # page/database id -> its parent

    def validate(self) -> None:
        """Ask who the integration is, then for one shared page, without retries."""
        once = RetryPolicy(attempts=1)
        try:
            self._client.get("/v1/users/me", policy=once)
            found = self._client.post("/v1/search", self._query(None, 1), policy=once)
        except TransientError as exc:
            raise TransientError(
                f"notion `base_url` {self.options.base_url}: {exc}; expected the Notion API "
                "answering there; check `base_url` and try again later"
            ) from exc
        if not found.get("results"):
            raise ConfigError(
                "notion: no page is shared with the integration, so there is nothing to "
                "read; share the pages (or a parent page) with it in Notion: ••• > "
                "Connections > add the integration"
            )

    def _query(self, cursor: str | None, size: int) -> dict[str, Any]:
        body: dict[str, Any] = {
            "filter": {"property": "object", "value": "page"},
            "sort": {"direction": "descending", "timestamp": "last_edited_time"},
            "page_size": size,
        }
        if cursor:
            body["start_cursor"] = cursor
        return body

    def read(
        self, window: Window, checkpoint: Checkpoint | None, known: KnownVersions
    ) -> ReadStream:
        """Yield the pages edited since the last run, newest first."""
        state = json.loads(checkpoint.cursor) if checkpoint else {}
        self._parents.clear()  # a page moved since the last run is read again
        at: dict[str, Any] | None = state.get("at")
        before: str | None = state.get("newest")
        opened: str | None = None  # the oldest open minute listed (see OPEN_FOR)
        if at is not None:
            since, cursor, newest = at.get("since"), at.get("cursor"), at.get("newest")
            opened = at.get("open")
        else:
            last = _time(before)
            since = (last - self._overlap).isoformat() if last is not None else None
            cursor, newest = None, None
        bound, now = _time(since), utcnow()
        while True:
            try:
                answer = self._client.post(
                    "/v1/search", self._query(cursor, self.options.page_size)
                )
            except BadRequest:
                if cursor is None:
                    raise
                cursor = None  # a saved cursor Notion refuses now: list again from the top
                continue
            stop = False
            for page in answer.get("results") or []:
                edited = _time(page.get("last_edited_time"))
                if bound is not None and edited is not None and edited < bound:
                    stop = True
                    break
                if edited is not None and (newest is None or edited.isoformat() > newest):
                    newest = edited.isoformat()
                if edited is not None and edited > now - OPEN_FOR:
                    opened = min(opened or edited.isoformat(), edited.isoformat())
                if page.get("archived") or page.get("in_trash"):
                    yield Deleted(f"page/{page['id']}")
                    continue
                yield self._document(page, now)
            cursor = answer.get("next_cursor")
            if stop or not answer.get("has_more") or not cursor:
                break
            spot = {"since": since, "cursor": cursor, "newest": newest, "open": opened}
            yield Checkpoint(json.dumps({"newest": before, "at": spot}))
        if before is not None and (newest is None or before > newest):
            newest = before
        if opened is not None and newest is not None and opened < newest:
            newest = opened  # the next run lists that minute again, once it is closed
        return Checkpoint(json.dumps({"newest": newest}))

    def _document(self, page: dict[str, Any], now: datetime) -> SourceDocument:
        edited = _time(page.get("last_edited_time"))
        parent = page.get("parent") or {}
        version = str(page.get("last_edited_time", ""))
        if edited is not None and edited > now - OPEN_FOR:
            version += f" read {now.isoformat()}"  # its minute is open: no proof of no edit
        return SourceDocument(
            object_id=f"page/{page['id']}",
            locator=str(page.get("url") or f"https://www.notion.so/{page['id']}"),
            title=title_of(page),
            version=version,
            fetch_ref=str(page["id"]),
            media_type="text/markdown",
            updated_at=edited,
            metadata={
                "kind": "row" if parent.get("type") == "database_id" else "page",
                "parent": str(parent.get(str(parent.get("type")), "")),
                HIERARCHY_KEY: self._path(page),
            },
        )

    def _path(self, page: dict[str, Any]) -> str:
        """The ids above the page, top first, then its own, dashes dropped."""
        nodes = [str(page["id"])]
        parent: dict[str, Any] = page.get("parent") or {}
        while parent.get("type") in ("page_id", "database_id") and len(nodes) < MAX_PATH:
            kind = str(parent["type"])
            above = str(parent[kind])
            nodes.append(above)
            if above not in self._parents:
                object_path = "pages" if kind == "page_id" else "databases"
                try:
                    found = self._client.get(f"/v1/{object_path}/{above}")
                except MissingAtServer:
                    break  # not shared with the integration: the path starts here
                self._parents[above] = found.get("parent") or {}
            parent = self._parents[above]
        return "/".join(node.replace("-", "") for node in reversed(nodes))

    def fetch(self, ref: str) -> bytes:
        """The page's title, a row's properties and its blocks, as Markdown."""
        try:
            page = self._client.get(f"/v1/pages/{ref}")
            body = self._blocks(ref, 0)
        except MissingAtServer as exc:
            raise ItemError("not_found", f"notion page {ref} is gone or unshared: {exc}") from exc
        return page_markdown(page, body)

    def _blocks(self, block_id: str, depth: int) -> list[str]:
        lines: list[str] = []
        for block in self._client.every(f"/v1/blocks/{block_id}/children"):
            nested = block.get("has_children") and block.get("type") not in (
                "child_page",
                "child_database",
            )
            children = (
                self._blocks(str(block["id"]), depth + 1) if nested and depth < MAX_DEPTH else []
            )
            lines.extend(block_lines(block, children, depth))
        return lines

    def enumerate(self) -> Iterator[str]:
        """Every page shared with the integration (not archived); raises if a page fails."""
        cursor: str | None = None
        while True:
            answer = self._client.post("/v1/search", self._query(cursor, 100))
            for page in answer.get("results") or []:
                if not (page.get("archived") or page.get("in_trash")):
                    yield f"page/{page['id']}"
            cursor = answer.get("next_cursor")
            if not answer.get("has_more") or not cursor:
                return

    def groups(self) -> Iterator[ListedGroup]:
        """The workspace's people (by email) as one group, ``{source}:group:workspace``."""
        emails = sorted(
            {
                str(user["person"]["email"])
                for user in self._client.every("/v1/users", capability=READ_USERS)
                if user.get("type") == "person" and (user.get("person") or {}).get("email")
            }
        )
        yield ListedGroup(
            principal_for_group(self._source_id, "workspace"),
            emails,
            display_name="Notion workspace members",
        )
