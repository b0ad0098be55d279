"""A fake Dropbox API v2: list_folder with cursors, changes, download, sharing, team groups.

- RPC endpoints are ``POST /2/{route}`` with a JSON body; content endpoints take their
  argument in the ``Dropbox-API-Arg`` header and answer bytes:
  https://www.dropbox.com/developers/documentation/http/documentation#formats
- ``files/list_folder`` (``path``, ``recursive``, ``limit``) and
  ``files/list_folder/continue`` (``cursor``): ``entries`` (``.tag`` ``file`` with ``id``,
  ``rev``, ``path_lower``, ``path_display``, ``server_modified``, ``size``,
  ``sharing_info.parent_shared_folder_id``; ``folder``; ``deleted``), ``cursor``,
  ``has_more``; once the listing is done the cursor returns the changes since it;
  a cursor Dropbox invalidated answers 409 ``reset``; a missing path 409
  ``path/not_found``:
  https://www.dropbox.com/developers/documentation/http/documentation#files-list_folder
  https://www.dropbox.com/developers/documentation/http/documentation#files-list_folder-continue
  https://developers.dropbox.com/detecting-changes-guide
- ``files/download`` by ``rev:``: https://www.dropbox.com/developers/documentation/http/documentation#files-download
- ``sharing/list_folder_members``: ``users`` (with ``access_type`` and ``user.email``),
  ``groups`` (``group.group_id``), ``invitees``, ``cursor``:
  https://www.dropbox.com/developers/documentation/http/documentation#sharing-list_folder_members
- ``team/groups/list`` and ``team/groups/members/list`` (``profile.email``):
  https://www.dropbox.com/developers/documentation/http/teams#team-groups-list
- errors: 401 ``invalid_access_token`` or ``missing_scope`` (``required_scope``), 429
  ``too_many_requests`` with ``Retry-After``; scopes per route:
  https://www.dropbox.com/developers/documentation/http/documentation#error-handling
  https://developers.dropbox.com/oauth-guide#dropbox-api-permissions
"""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from fakes.confluence.server import Answer, Call, FakeApi

__all__ = ["FakeDropbox"]

SCOPES = {
    "users/get_current_account": "account_info.read",
    "files/get_metadata": "files.metadata.read",
    "files/list_folder": "files.metadata.read",
    "files/list_folder/continue": "files.metadata.read",
    "files/download": "files.content.read",
    "sharing/list_folder_members": "sharing.read",
    "sharing/list_folder_members/continue": "sharing.read",
    "team/groups/list": "groups.read",
    "team/groups/members/list": "groups.read",
}


def error(status: int, summary: str, body: dict[str, Any]) -> Answer:
    return Answer(status, {"error_summary": summary + "/..", "error": body})


@dataclass
class File:
    path_display: str
    content: bytes
    shared_folder: str | None = None
    id: str = field(default_factory=lambda: "id:" + uuid.uuid4().hex[:12])
    rev: str = ""
    modified: datetime = field(default_factory=lambda: datetime(2024, 5, 1, 9, 0, tzinfo=UTC))


class FakeDropbox(FakeApi):
    """``with FakeDropbox() as dbx: dbx.put("/Docs/a.md", b"...")``."""

    def __init__(self) -> None:
        super().__init__(user="owner@example.com", token="sl.test")
        self.scopes = set(SCOPES.values())
        self.files: dict[str, File] = {}
        self.shared: dict[str, dict[str, Any]] = {}  # id -> users [(email, access)], groups
        self.team_groups: dict[str, dict[str, Any]] = {}  # id -> name, emails
        self.rate_limited = 0
        self.retry_after = "0"
        self.seq = 0
        self.changes: list[tuple[int, str]] = []
        self._cursors: dict[str, dict[str, Any]] = {}

    def authorized(self, headers: dict[str, str]) -> bool:
        return True  # answered in `answer`, with Dropbox's own error body

    def put(self, path: str, content: bytes, shared_folder: str | None = None) -> File:
        with self.lock:
            key = path.lower()
            old = self.files.get(key)
            file = File(path, content, shared_folder or (old.shared_folder if old else None))
            if old is not None:
                file.id = old.id
            self.seq += 1
            file.rev = hashlib.sha1(f"{path}:{self.seq}".encode()).hexdigest()[:12]
            file.modified = datetime(2024, 5, 1, 9, 0, tzinfo=UTC).replace(minute=self.seq % 60)
            self.files[key] = file
            self.changes.append((self.seq, key))
            return file

    def delete(self, path: str) -> None:
        with self.lock:
            del self.files[path.lower()]
            self.seq += 1
            self.changes.append((self.seq, path.lower()))

    def reset_cursors(self) -> None:
        with self.lock:
            for state in self._cursors.values():
                state["reset"] = True

    def _entry(self, key: str) -> dict[str, Any]:
        file = self.files.get(key)
        if file is None:
            name = key.rsplit("/", 1)[-1]
            return {".tag": "deleted", "name": name, "path_lower": key, "path_display": key}
        entry: dict[str, Any] = {
            ".tag": "file",
            "id": file.id,
            "name": file.path_display.rsplit("/", 1)[-1],
            "path_lower": key,
            "path_display": file.path_display,
            "rev": file.rev,
            "size": len(file.content),
            "server_modified": file.modified.strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        if file.shared_folder:
            entry["sharing_info"] = {
                "read_only": False,
                "parent_shared_folder_id": file.shared_folder,
            }
        return entry

    def answer(self, call: Call) -> Answer:
        if self.rate_limited > 0:
            self.rate_limited -= 1
            answer = error(
                429,
                "too_many_requests",
                {"reason": {".tag": "too_many_requests"}, "retry_after": int(self.retry_after)},
            )
            answer.headers["Retry-After"] = self.retry_after
            return answer
        if call.headers.get("authorization") != f"Bearer {self.token}":
            return error(401, "invalid_access_token", {".tag": "invalid_access_token"})
        route = call.path.removeprefix("/2/")
        scope = SCOPES.get(route)
        if scope is None:
            return Answer(400, b"Unknown API function")
        if scope not in self.scopes:
            return error(401, "missing_scope", {".tag": "missing_scope", "required_scope": scope})
        body = json.loads(call.body or b"null")
        if route == "files/download":
            rev = (
                json.loads(call.headers.get("dropbox-api-arg", "{}"))
                .get("path", "")
                .removeprefix("rev:")
            )
            found = next((f for f in self.files.values() if f.rev == rev), None)
            if found is None:
                return error(409, "path/not_found", {".tag": "path", "path": {".tag": "not_found"}})
            return Answer(200, found.content)
        if route == "users/get_current_account":
            return Answer(
                200,
                {"account_id": "dbid:owner", "email": self.user, "name": {"display_name": "Owner"}},
            )
        if route == "files/get_metadata":
            prefix = str(body["path"]).lower().rstrip("/") + "/"
            if not any(k.startswith(prefix) for k in self.files):
                return error(409, "path/not_found", {".tag": "path", "path": {".tag": "not_found"}})
            return Answer(200, {".tag": "folder", "path_lower": prefix.rstrip("/")})
        if route == "files/list_folder":
            return self._list(str(body.get("path", "")), int(body.get("limit", 2000)))
        if route == "files/list_folder/continue":
            return self._continue(str(body.get("cursor", "")))
        if route == "sharing/list_folder_members":
            folder = self.shared.get(str(body.get("shared_folder_id")))
            if folder is None:
                return error(
                    409,
                    "access_error/invalid_id",
                    {".tag": "access_error", "access_error": {".tag": "invalid_id"}},
                )
            return Answer(200, {
                "users": [{"access_type": {".tag": a}, "user": {"account_id": "dbid:" + e, "email": e}} for e, a in folder["users"]],
                "groups": [{"access_type": {".tag": "viewer"}, "group": {"group_id": g, "group_name": g}} for g in folder["groups"]],
                "invitees": [{"access_type": {".tag": "viewer"}, "invitee": {".tag": "email", "email": e}} for e in folder.get("invitees", [])],
                "cursor": None,
            })  # fmt: skip
        if route == "team/groups/list":
            groups = [
                {"group_id": g, "group_name": v["name"], "member_count": len(v["emails"])}
                for g, v in sorted(self.team_groups.items())
            ]
            return Answer(200, {"groups": groups, "cursor": "end", "has_more": False})
        if route == "team/groups/members/list":
            group = self.team_groups[str(body["group"]["group_id"])]
            members = [
                {
                    "profile": {"email": e, "team_member_id": "dbmid:" + e},
                    "access_type": {".tag": "member"},
                }
                for e in group["emails"]
            ]
            return Answer(200, {"members": members, "cursor": "end", "has_more": False})
        return Answer(400, b"Unknown API function")

    def _token(self, state: dict[str, Any]) -> str:
        token = uuid.uuid4().hex
        self._cursors[token] = state
        return token

    def _list(self, path: str, limit: int) -> Answer:
        root = path.lower().rstrip("/")
        keys = sorted(k for k in self.files if k.startswith(root + "/"))
        if path and not keys:
            return error(409, "path/not_found", {".tag": "path", "path": {".tag": "not_found"}})
        folders = sorted(
            {
                k.rsplit("/", n)[0]
                for k in keys
                for n in range(1, k.count("/"))
                if k.rsplit("/", n)[0].startswith(root + "/")
            }
        )
        entries = [
            {".tag": "folder", "path_lower": f, "path_display": f, "name": f.rsplit("/", 1)[-1]}
            for f in folders
        ]
        entries += [self._entry(k) for k in keys]
        return self._chunk(
            {
                "mode": "list",
                "entries": entries,
                "offset": 0,
                "seq": self.seq,
                "root": root,
                "limit": limit,
            }
        )

    def _chunk(self, state: dict[str, Any]) -> Answer:
        start, limit = state["offset"], state["limit"]
        chunk = state["entries"][start : start + limit]
        more = start + limit < len(state["entries"])
        if more:
            cursor = self._token(state | {"offset": start + limit})
        else:
            cursor = self._token(
                {"mode": "changes", "seq": state["seq"], "root": state["root"], "limit": limit}
            )
        return Answer(200, {"entries": chunk, "cursor": cursor, "has_more": more})

    def _continue(self, cursor: str) -> Answer:
        state = self._cursors.get(cursor)
        if state is None:
            return Answer(
                400,
                b'Error in call to API function "files/list_folder/continue": Invalid "cursor" parameter',
            )
        if state.get("reset"):
            return error(409, "reset", {".tag": "reset"})
        if state["mode"] == "list":
            return self._chunk(state)
        changed = sorted(
            {k for s, k in self.changes if s > state["seq"] and k.startswith(state["root"] + "/")}
        )
        entries = [self._entry(k) for k in changed]
        following = {
            "mode": "changes",
            "seq": self.seq,
            "root": state["root"],
            "limit": state["limit"],
        }
        return Answer(
            200, {"entries": entries, "cursor": self._token(following), "has_more": False}
        )
