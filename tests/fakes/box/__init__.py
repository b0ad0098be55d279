"""A fake Box API 2.0: folder items, files, content, the changes event stream,
collaborations and groups, written from Box's reference.

- ``GET /2.0/folders/{id}`` (``path_collection``) and ``GET /2.0/folders/{id}/items``
  with marker paging (``usemarker=true``, ``marker``, ``limit``; ``next_marker``, null at
  the end): https://developer.box.com/reference/get-folders-id-items and
  https://developer.box.com/guides/api-calls/pagination/marker-based
- ``GET /2.0/files/{id}`` (``etag``, ``sha1``, ``file_version``, ``path_collection``,
  ``owned_by``); a trashed or removed file answers 404 ``not_found``:
  https://developer.box.com/reference/get-files-id
- ``GET /2.0/files/{id}/content`` answers 302 to a download URL:
  https://developer.box.com/reference/get-files-id-content
- ``GET /2.0/events?stream_type=changes&stream_position=…``: ``now`` answers no entries
  and the current ``next_stream_position``; a position answers the events after it
  (``event_type`` ``ITEM_UPLOAD``, ``ITEM_TRASH``, …, ``source`` the item), ``chunk_size``
  and ``next_stream_position``: https://developer.box.com/reference/get-events and
  https://developer.box.com/guides/events/pagination. Box keeps the stream for a limited
  time; a position it no longer has (or a malformed one) answers 400 here, as Box
  answers an invalid parameter (``bad_request``).
- ``GET /2.0/files/{id}/collaborations`` and ``/2.0/folders/{id}/collaborations``
  (``accessible_by`` a user with ``login`` or a group, ``status`` ``accepted`` or
  ``pending``): https://developer.box.com/reference/get-files-id-collaborations and
  https://developer.box.com/reference/get-folders-id-collaborations
- ``DELETE /2.0/collaborations/{id}`` removes one collaboration and answers 204 with a
  blank body (404 ``not_found`` for an id it does not hold); the changes stream then
  names the item with ``COLLAB_REMOVE_COLLABORATOR``:
  https://developer.box.com/reference/delete-collaborations-id and
  https://developer.box.com/guides/events/user-events/for-user
- ``GET /2.0/groups`` and ``GET /2.0/groups/{id}/memberships`` (offset paging,
  ``total_count``; ``user.login``): https://developer.box.com/reference/get-groups and
  https://developer.box.com/reference/get-groups-id-memberships
- ``GET /2.0/users/me``: https://developer.box.com/reference/get-users-me
- errors: ``{"type": "error", "status", "code", "message"}``; 401 with an empty body and
  ``WWW-Authenticate: Bearer … error="invalid_token"``; 403 ``insufficient_scope`` when
  the token lacks the scope (``root_readonly`` for content, ``manage_groups`` for
  groups); 429 ``rate_limit_exceeded`` with ``Retry-After``:
  https://developer.box.com/guides/api-calls/status-codes and
  https://developer.box.com/guides/api-calls/permissions-and-errors/rate-limits and
  https://developer.box.com/guides/api-calls/permissions-and-errors/scopes
"""

from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from fakes.confluence.server import Answer, Call, FakeApi

__all__ = ["FakeBox"]

_ids = itertools.count(1000)


def error(status: int, code: str, message: str) -> Answer:
    body = {"type": "error", "status": status, "code": code, "message": message}
    return Answer(status, body)


@dataclass
class Node:
    id: str
    name: str
    parent: str | None  # folder id; None for the root "0"
    folder: bool
    content: bytes = b""
    owner: str = "owner@example.com"
    version: int = 1
    collabs: list[dict[str, Any]] = field(default_factory=list)


class FakeBox(FakeApi):
    """``with FakeBox() as box: box.put("Docs/a.md", b"...")`` (paths below All Files)."""

    def __init__(self) -> None:
        super().__init__(user="owner@example.com", token="box-token")
        self.scopes = {"root_readonly", "manage_groups"}
        self.nodes: dict[str, Node] = {"0": Node("0", "All Files", None, True)}
        self.groups: dict[str, tuple[str, list[str]]] = {}  # id -> (name, logins)
        self.events: list[tuple[int, str, str, str]] = []  # (position, type, kind, id)
        self.position = 5000
        self.floor = 0  # positions below this are no longer kept
        self.rate_limited = 0
        self.retry_after = "0"

    def authorized(self, headers: dict[str, str]) -> bool:
        return True  # answered in `answer`, with Box's own 401

    # -- state ---------------------------------------------------------------------------

    def _event(self, kind: str, node: Node) -> None:
        self.position += 1
        self.events.append((self.position, kind, "folder" if node.folder else "file", node.id))

    def folder(self, path: str) -> Node:
        """The folder at ``path`` (``"A/B"``), created with its parents when missing."""
        with self.lock:
            node = self.nodes["0"]
            for name in [p for p in path.split("/") if p]:
                child = next(
                    (n for n in self.nodes.values() if n.parent == node.id and n.name == name),
                    None,
                )
                if child is None:
                    child = Node(str(next(_ids)), name, node.id, True)
                    self.nodes[child.id] = child
                    self._event("ITEM_CREATE", child)
                node = child
            return node

    def put(self, path: str, content: bytes) -> Node:
        with self.lock:
            folder_path, _, name = path.rpartition("/")
            parent = self.folder(folder_path)
            node = next(
                (n for n in self.nodes.values() if n.parent == parent.id and n.name == name), None
            )
            if node is None:
                node = Node(str(next(_ids)), name, parent.id, False, content)
                self.nodes[node.id] = node
            else:
                node.content, node.version = content, node.version + 1
            self._event("ITEM_UPLOAD", node)
            return node

    def trash(self, node_id: str) -> None:
        with self.lock:
            node = self.nodes.pop(node_id)
            doomed = [node.id]
            while doomed:  # a trashed folder takes its contents along
                gone = doomed.pop()
                for child in [n for n in self.nodes.values() if n.parent == gone]:
                    del self.nodes[child.id]
                    doomed.append(child.id)
            self._event("ITEM_TRASH", node)

    def move(self, node_id: str, parent_id: str) -> None:
        with self.lock:
            self.nodes[node_id].parent = parent_id
            self._event("ITEM_MOVE", self.nodes[node_id])

    def collaborate(
        self, node_id: str, who: str, *, group: bool = False, pending: bool = False
    ) -> None:
        with self.lock:
            accessible: dict[str, Any] = (
                {"type": "group", "id": who, "name": self.groups.get(who, (who, []))[0]}
                if group
                else {"type": "user", "id": "u-" + who, "login": who, "name": who}
            )
            self.nodes[node_id].collabs.append({
                "type": "collaboration", "id": str(next(_ids)), "role": "viewer",
                "status": "pending" if pending else "accepted",
                "accessible_by": None if pending else accessible,
                "invite_email": who if pending else None,
            })  # fmt: skip
            self._event("COLLAB_ADD", self.nodes[node_id])

    def uncollaborate(self, collaboration_id: str) -> bool:
        """Remove one collaboration (what ``DELETE /2.0/collaborations/{id}`` does)."""
        with self.lock:
            for node in self.nodes.values():
                kept = [c for c in node.collabs if c["id"] != collaboration_id]
                if len(kept) < len(node.collabs):
                    node.collabs = kept
                    self._event("COLLAB_REMOVE_COLLABORATOR", node)
                    return True
            return False

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        base: Any = super()._handler()

        class Handler(base):  # type: ignore[misc]
            def do_DELETE(self) -> None:
                self._serve("DELETE")

        return Handler

    # -- representations -----------------------------------------------------------------

    def _path(self, node: Node) -> list[dict[str, Any]]:
        chain: list[dict[str, Any]] = []
        parent = node.parent
        while parent is not None:
            up = self.nodes[parent]
            chain.insert(0, {"type": "folder", "id": up.id, "name": up.name})
            parent = up.parent
        return chain

    def _resource(self, node: Node) -> dict[str, Any]:
        body: dict[str, Any] = {
            "type": "folder" if node.folder else "file",
            "id": node.id,
            "name": node.name,
            "etag": str(node.version - 1),
            "sequence_id": str(node.version - 1),
            "path_collection": {
                "total_count": len(self._path(node)),
                "entries": self._path(node),
            },
            "owned_by": {"type": "user", "id": "u-" + node.owner, "login": node.owner},
            "modified_at": f"2024-05-01T09:{node.version:02d}:00-07:00",
        }
        if not node.folder:
            body["sha1"] = hashlib.sha1(node.content).hexdigest()
            body["size"] = len(node.content)
            body["file_version"] = {"type": "file_version", "id": f"v{node.id}-{node.version}"}
        return body

    # -- routing -------------------------------------------------------------------------

    def answer(self, call: Call) -> Answer:
        if self.rate_limited > 0:
            self.rate_limited -= 1
            answer = error(429, "rate_limit_exceeded", "Request rate limit exceeded")
            answer.headers["Retry-After"] = self.retry_after
            return answer
        if call.path.startswith("/download/"):  # the pre-authenticated download URL
            node = self.nodes.get(call.path.rsplit("/", 1)[-1])
            return Answer(200, node.content) if node else Answer(404, b"")
        if call.headers.get("authorization") != f"Bearer {self.token}":
            return Answer(
                401, None, {"WWW-Authenticate": 'Bearer realm="Service", error="invalid_token"'}
            )
        parts = call.path.removeprefix("/2.0/").split("/")
        needed = "manage_groups" if parts[0] == "groups" else "root_readonly"
        if parts[0] != "users" and needed not in self.scopes:
            return error(
                403,
                "insufficient_scope",
                "The request requires higher privileges than provided by the access token.",
            )
        if parts == ["users", "me"]:
            return Answer(200, {"type": "user", "id": "u-owner", "login": self.user})
        if parts[0] == "events":
            return self._events(call.query)
        if parts[0] == "groups":
            return self._groups(parts, call.query)
        if call.method == "DELETE":
            if parts[0] == "collaborations" and len(parts) == 2 and self.uncollaborate(parts[1]):
                return Answer(204, None)
            return error(404, "not_found", "Not Found")
        if parts[0] not in ("files", "folders") or len(parts) < 2:
            return error(404, "not_found", "Not Found")
        node = self.nodes.get(parts[1])
        if node is None or node.folder != (parts[0] == "folders"):
            return error(404, "not_found", f"Could not find the specified resource {parts[1]}")
        rest = parts[2:]
        if not rest:
            return Answer(200, self._resource(node))
        if rest == ["content"]:
            return Answer(302, None, {"Location": f"{self.url}/download/{node.id}"})
        if rest == ["collaborations"]:
            return Answer(200, {"entries": node.collabs, "next_marker": None, "limit": 100})
        if rest == ["items"]:
            return self._items(node, call.query)
        return error(404, "not_found", "Not Found")

    def _items(self, folder: Node, query: dict[str, str]) -> Answer:
        if query.get("usemarker") != "true":
            return error(400, "bad_request", "this fake pages folder items by marker only")
        children = sorted(
            (n for n in self.nodes.values() if n.parent == folder.id),
            key=lambda n: (not n.folder, n.name, n.id),
        )
        start = int(query.get("marker") or 0)
        limit = int(query.get("limit", 100))
        chunk = children[start : start + limit]
        more = start + limit < len(children)
        return Answer(200, {
            "entries": [self._resource(n) for n in chunk], "limit": limit,
            "next_marker": str(start + limit) if more else None,
        })  # fmt: skip

    def _events(self, query: dict[str, str]) -> Answer:
        if query.get("stream_type") != "changes":
            return error(400, "bad_request", "this fake serves the changes stream only")
        position = query.get("stream_position", "0")
        if position == "now":
            return Answer(
                200, {"chunk_size": 0, "next_stream_position": self.position, "entries": []}
            )
        if not position.isdigit() or int(position) < self.floor:
            return error(400, "bad_request", f"Invalid value '{position}' for stream_position")
        after = [e for e in self.events if e[0] > int(position)][: int(query.get("limit", 100))]
        entries = [
            {
                "type": "event", "event_id": f"e{pos}", "event_type": kind,
                "source": {"type": source, "id": node_id},
            }
            for pos, kind, source, node_id in after
        ]  # fmt: skip
        following = after[-1][0] if after else max(int(position), self.position)
        return Answer(
            200,
            {"chunk_size": len(entries), "next_stream_position": following, "entries": entries},
        )

    def _groups(self, parts: list[str], query: dict[str, str]) -> Answer:
        offset, limit = int(query.get("offset", 0)), int(query.get("limit", 100))
        if len(parts) == 1:
            rows = [
                {"type": "group", "id": g, "name": n} for g, (n, _) in sorted(self.groups.items())
            ]
        elif len(parts) == 3 and parts[2] == "memberships" and parts[1] in self.groups:
            name, logins = self.groups[parts[1]]
            rows = [
                {"type": "group_membership", "id": f"m-{parts[1]}-{i}", "role": "member",
                 "user": {"type": "user", "id": "u-" + login, "login": login},
                 "group": {"type": "group", "id": parts[1], "name": name}}
                for i, login in enumerate(logins)
            ]  # fmt: skip
        else:
            return error(404, "not_found", "Not Found")
        return Answer(200, {
            "entries": rows[offset : offset + limit], "total_count": len(rows),
            "offset": offset, "limit": limit,
        })  # fmt: skip
