"""The Box connector: walk one folder, then follow the changes event stream.

A first run takes the stream's current position (``stream_position=now``) before it
walks, so nothing changed during the walk is missed; it then walks the folder breadth
first (``/2.0/folders/{id}/items``, marker paging), a ``Checkpoint`` after every page
holding the position and the walk's queue (each pending folder with its marker and the
ids of the folders above it), so a run resumes mid-listing. Later runs read
``/2.0/events?stream_type=changes`` from the saved position, chunk by chunk, and re-read
each file an event names: a file Box no longer answers (trashed, deleted) or that left
the folder is ``Deleted``; a folder an event names (moved in, collaborators changed) is
walked again, its files re-read with their ACLs. A position Box refuses (expired: 400)
walks again. Readers: the owner plus the accepted collaborators on the file and on every
folder above it (collaborations are inherited downwards); a collaboration list that cannot
be read fails the file closed. ``enumerate()`` walks afresh, for what events cannot show one by one
(files under a trashed folder). See docs/connectors/box.md.
"""

from __future__ import annotations

import json
import mimetypes
from collections.abc import Generator, Iterator
from datetime import datetime
from typing import Any, ClassVar

from pydantic import Field

from headwater.clock import as_utc
from headwater.connectors._bearer import BearerApiOptions
from headwater.connectors.base import ConnectorCapabilities, ReadStream, SourceContext
from headwater.connectors.box._acl import grants, principal_for_group
from headwater.connectors.box._client import BoxClient, BoxError
from headwater.connectors.globs import KeyFilter
from headwater.errors import ConfigError, ItemError, TransientError
from headwater.retry import RetryPolicy
from headwater.scopes import HIERARCHY_KEY
from headwater.types import (
    Access,
    Checkpoint,
    Deleted,
    Failure,
    KnownVersions,
    ListedGroup,
    SourceDocument,
    SourceItem,
    Stage,
    Window,
)

FIELDS = "id,type,name,etag,sha1,size,modified_at,file_version,owned_by,path_collection"
Listing = Generator[SourceItem, None, Checkpoint]


class BoxOptions(BearerApiOptions):
    """The keys of a ``box`` source."""

    folder_id: str = Field(default="0", pattern=r"^[0-9]+$")  # "0" is All Files
    include: list[str] = Field(default_factory=list)
    exclude: list[str] = Field(default_factory=list)
    list_groups: bool = False  # groups() lists the enterprise's groups (manage_groups)
    api_url: str = Field(default="https://api.box.com", pattern=r"^https?://")
    page_size: int = Field(default=1000, ge=1, le=1000)


class BoxConnector:
    """Reads the files under one Box folder."""

    type_name: ClassVar[str] = "box"
    capabilities: ClassVar[ConnectorCapabilities] = ConnectorCapabilities()
    Options: ClassVar[type[BoxOptions]] = BoxOptions

    def __init__(self, options: BoxOptions, context: SourceContext) -> None:
        self.options = options
        self._source_id = context.source_id
        self._keys = KeyFilter(options.include, options.exclude)
        self._client = BoxClient(
            options.api_url,
            options.token.get_secret_value(),
            timeout=options.timeout,
            user_agent=context.user_agent,
            policy=options.retry_policy(),
        )
        self._folders: dict[str, tuple[set[str], set[str]]] = {}
        self._root_above: list[str] | None = None

    def validate(self) -> None:
        """Who the token is, that the folder exists, and (with groups) the groups scope."""
        once = RetryPolicy(attempts=1)
        try:
            self._client.json("/users/me", policy=once)
            try:
                self._client.json(f"/folders/{self.options.folder_id}", policy=once)
            except BoxError as exc:
                raise ConfigError(
                    f"box `folder_id` {self.options.folder_id!r} is not a folder the token "
                    f'sees (HTTP {exc.status} {exc.code}); fix `folder_id` ("0" is All Files)'
                ) from exc
            if self.options.list_groups:
                self._client.json("/groups", {"limit": "1"}, policy=once)
        except TransientError as exc:
            raise TransientError(
                f"box `api_url` {self.options.api_url}: {exc}; expected the Box API answering "
                "there; try again later"
            ) from exc

    # -- read ----------------------------------------------------------------------------

    def read(
        self, window: Window, checkpoint: Checkpoint | None, known: KnownVersions
    ) -> ReadStream:
        """Yield the folder's files (first run) or the changes since the saved position."""
        state: dict[str, Any] = json.loads(checkpoint.cursor) if checkpoint else {}
        if "queue" in state:
            return (yield from self._walk(state))
        if "stream" in state:
            try:
                first = self._events(str(state["stream"]))
            except BoxError as exc:
                if exc.status != 400:
                    raise
                first = None  # a position Box no longer keeps: walk again
            if first is not None:
                return (yield from self._changes(first))
        return (yield from self._walk(self._start()))

    def _start(self) -> dict[str, Any]:
        """A walk's first state: the stream's position now, the root folder queued."""
        now = self._events("now")
        root = self._client.json(f"/folders/{self.options.folder_id}", {"fields": FIELDS})
        above = [
            str(e["id"])
            for e in (root.get("path_collection") or {}).get("entries") or []
            if str(e.get("id")) != "0"
        ]
        up = above + ([str(root["id"])] if str(root["id"]) != "0" else [])
        head = {"id": str(root["id"]), "path": "", "up": up, "marker": None}
        return {"stream": str(now["next_stream_position"]), "queue": [head]}

    def _walk(self, state: dict[str, Any]) -> Listing:
        queue: list[dict[str, Any]] = state["queue"]
        while queue:
            head = queue[0]
            params = {"fields": FIELDS, "limit": str(self.options.page_size)}
            if head["marker"]:
                params["marker"] = head["marker"]
            page = self._client.json(f"/folders/{head['id']}/items", params | {"usemarker": "true"})
            for entry in page.get("entries") or []:
                path = f"{head['path']}/{entry.get('name', '')}".lstrip("/")
                if entry.get("type") == "folder":
                    up = [*head["up"], str(entry["id"])]
                    queue.append({"id": str(entry["id"]), "path": path, "up": up, "marker": None})
                elif entry.get("type") == "file" and self._keys(path):
                    yield self._document(entry, path, head["up"])
            head["marker"] = page.get("next_marker") or None
            if head["marker"] is None:
                queue.pop(0)
            if queue:
                yield Checkpoint(json.dumps({"stream": state["stream"], "queue": queue}))
        return Checkpoint(json.dumps({"stream": state["stream"]}))

    def _events(self, position: str) -> dict[str, Any]:
        params = {"stream_type": "changes", "stream_position": position, "limit": "500"}
        return self._client.json("/events", params)

    def _changes(self, page: dict[str, Any]) -> Listing:
        while True:
            entries = page.get("entries") or []
            sources = [e.get("source") or {} for e in entries]
            files = dict.fromkeys(str(s["id"]) for s in sources if s.get("type") == "file")
            folders = dict.fromkeys(str(s["id"]) for s in sources if s.get("type") == "folder")
            seen: set[str] = set()
            for file_id in files:
                item = self._changed(file_id)
                if item is not None:
                    seen.add(file_id)
                    yield item
            if folders:
                self._folders.clear()  # a folder's collaborators may have changed
            for folder_id in folders:
                for item in self._refolder(folder_id):
                    if item.object_id not in seen:
                        seen.add(item.object_id)
                        yield item
            position = str(page["next_stream_position"])
            if not entries:
                return Checkpoint(json.dumps({"stream": position}))
            yield Checkpoint(json.dumps({"stream": position}))
            page = self._events(position)

    def _refolder(self, folder_id: str) -> Iterator[SourceDocument | Failure]:
        """The files under a folder an event names (moved in, renamed, collaborators
        changed, restored), walked afresh; nothing for a folder gone or outside."""
        try:
            folder = self._client.json(f"/folders/{folder_id}", {"fields": FIELDS})
        except BoxError as exc:
            if exc.status == 404:
                return  # trashed or deleted: enumeration prunes its files
            raise
        chain = [(str(e["id"]), str(e.get("name", ""))) for e in _path(folder)]
        chain.append((str(folder["id"]), str(folder.get("name", ""))))
        ids = [i for i, _ in chain]
        if self.options.folder_id not in ids:
            if folder_id in self._above():  # a folder above the one read: all of it
                yield from self._refolder(self.options.folder_id)
            return  # else outside the folder read (files moved out have their own events)
        path = "/".join(name for _, name in chain[ids.index(self.options.folder_id) + 1 :])
        head = {"id": folder_id, "path": path, "up": [i for i in ids if i != "0"], "marker": None}
        for item in self._walk({"stream": "", "queue": [head]}):
            if isinstance(item, SourceDocument | Failure):
                yield item

    def _above(self) -> list[str]:
        """The ids of the folders above the folder read (their collaborators inherit)."""
        if self._root_above is None:
            root = self._client.json(f"/folders/{self.options.folder_id}", {"fields": FIELDS})
            self._root_above = [str(e["id"]) for e in _path(root)]
        return self._root_above

    def _changed(self, file_id: str) -> SourceItem | None:
        """The file's current state, ``Deleted`` when gone or out of the folder."""
        try:
            entry = self._client.json(f"/files/{file_id}", {"fields": FIELDS})
        except BoxError as exc:
            if exc.status == 404:
                return Deleted(file_id)
            raise
        chain = [(str(e["id"]), str(e.get("name", ""))) for e in _path(entry)]
        ids = [i for i, _ in chain]
        if self.options.folder_id not in ids:
            return Deleted(file_id)  # moved out of the folder (or never in it)
        below = [name for _, name in chain[ids.index(self.options.folder_id) + 1 :]]
        path = "/".join([*below, str(entry.get("name", ""))])
        if not self._keys(path):
            return Deleted(file_id)  # renamed out of include/exclude
        return self._document(entry, path, [i for i in ids if i != "0"])

    def _document(self, entry: dict[str, Any], path: str, up: list[str]) -> SourceItem:
        file_id = str(entry["id"])
        locator = f"https://app.box.com/file/{file_id}"
        try:
            access = self._access(file_id, entry, up)
        except (TransientError, ItemError) as exc:
            return Failure(
                file_id, locator, Stage.FETCH.value, "acl_unavailable",
                f"box file {file_id} ({path}): its collaborations could not be read ({exc}); "
                "not indexed with a guessed ACL; the next sync tries again",
            )  # fmt: skip
        modified = entry.get("modified_at")
        version = (entry.get("file_version") or {}).get("id") or entry.get("sha1")
        return SourceDocument(
            object_id=file_id,
            locator=locator,
            title="",  # the parser finds the title; else the core uses the path
            version=str(version or entry.get("etag")),
            fetch_ref=file_id,
            media_type=mimetypes.guess_type(path)[0],
            updated_at=as_utc(datetime.fromisoformat(str(modified))) if modified else None,
            metadata={"path": path, "size": str(entry.get("size", 0)), HIERARCHY_KEY: path},
            access=access,
        )

    def _access(self, file_id: str, entry: dict[str, Any], up: list[str]) -> Access:
        users, groups = grants(self._source_id, self._collaborations(f"/files/{file_id}"))
        owner = (entry.get("owned_by") or {}).get("login")
        if owner:
            users.add(str(owner))
        for folder in up:
            if folder not in self._folders:
                found = self._collaborations(f"/folders/{folder}")
                self._folders[folder] = grants(self._source_id, found)
            users |= self._folders[folder][0]
            groups |= self._folders[folder][1]
        return Access(users=tuple(sorted(users)), groups=tuple(sorted(groups)))

    def _collaborations(self, item: str) -> list[dict[str, Any]]:
        pages = self._client.marker_pages(f"{item}/collaborations", {"limit": "100"})
        return [entry for entries, _ in pages for entry in entries]

    # -- fetch, enumerate, groups --------------------------------------------------------

    def fetch(self, ref: str) -> bytes:
        """The current content of the file ``ref``."""
        return self._client.get(f"/files/{ref}/content").content

    def enumerate(self) -> Iterator[str]:
        """Every file under the folder now (a fresh walk); raises if a page fails."""
        queue = [(self.options.folder_id, "")]
        params = {"fields": "id,type,name", "limit": str(self.options.page_size)}
        while queue:
            folder, prefix = queue.pop(0)
            for entries, _ in self._client.marker_pages(f"/folders/{folder}/items", params):
                for entry in entries:
                    path = f"{prefix}/{entry.get('name', '')}".lstrip("/")
                    if entry.get("type") == "folder":
                        queue.append((str(entry["id"]), path))
                    elif entry.get("type") == "file" and self._keys(path):
                        yield str(entry["id"])

    def groups(self) -> Iterator[ListedGroup]:
        """The enterprise's groups with their members' logins (``list_groups``), else none.
        Box groups do not nest: members are users."""
        if not self.options.list_groups:
            return
        for group in list(self._client.offset_entries("/groups", 1000)):
            gid = str(group["id"])
            members = self._client.offset_entries(f"/groups/{gid}/memberships", 1000)
            logins = sorted(
                {str(m["user"]["login"]) for m in members if (m.get("user") or {}).get("login")}
            )
            yield ListedGroup(
                principal_for_group(self._source_id, gid),
                logins,
                display_name=str(group.get("name") or gid),
            )


def _path(item: dict[str, Any]) -> list[dict[str, Any]]:
    """The folders above an item, from All Files down (``path_collection.entries``)."""
    return list((item.get("path_collection") or {}).get("entries") or [])
