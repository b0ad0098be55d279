"""A fake Google Drive API v3 on 127.0.0.1, following the documented behaviour.

- files.list: https://developers.google.com/drive/api/reference/rest/v3/files/list
  (``pageToken``/``nextPageToken``, ``q=trashed = false``, ``corpora``/``driveId``,
  ``permissions`` in the file resource, not populated for shared drive items:
  https://developers.google.com/drive/api/reference/rest/v3/files#File.FIELDS.permissions)
- ``parents`` in the file resource (the one folder a file sits in; a file at the top of
  My Drive has the root folder's id, one at the top of a shared drive the drive's id) and
  files.get of a folder by id, or of the alias ``root`` for My Drive's root folder
  (which has no ``parents``): https://developers.google.com/drive/api/reference/rest/v3/files#File.FIELDS.parents,
  https://developers.google.com/drive/api/guides/folder (folders are files of mimeType
  ``application/vnd.google-apps.folder``)
- files.get of a file by id (its resource; 404 ``notFound`` once deleted or unshared):
  https://developers.google.com/drive/api/reference/rest/v3/files/get
- push notification channels: changes.watch (POST ``/drive/v3/changes/watch?pageToken=``,
  body ``id``, ``type: web_hook``, an ``https`` ``address``, ``token``, ``expiration`` in
  ms; the answer's ``expiration`` is what Drive grants, at most a week for changes;
  ``resourceId`` names the watched resource):
  https://developers.google.com/drive/api/reference/rest/v3/changes/watch and
  https://developers.google.com/drive/api/guides/push; channels.stop (POST
  ``/drive/v3/channels/stop`` with ``id`` and ``resourceId``; 204, 404 for an unknown
  channel): https://developers.google.com/drive/api/reference/rest/v3/channels/stop.
  Drive's first ``sync`` message to the address is not sent here.
- permissions.list: https://developers.google.com/drive/api/reference/rest/v3/permissions/list
- files.get ``alt=media`` and files.export (``mimeType=text/plain|text/csv``):
  https://developers.google.com/drive/api/guides/manage-downloads
- changes.getStartPageToken / changes.list (``nextPageToken`` until the last page, which
  carries ``newStartPageToken``; ``removed`` for a file deleted or no longer visible,
  the file resource with ``trashed`` for a trashed one):
  https://developers.google.com/drive/api/guides/manage-changes and
  https://developers.google.com/drive/api/reference/rest/v3/changes/list
- an expired or invalid page token answers 410 Gone (the brief's reading of the changes
  docs), or with ``token_refusal = 400`` what the real API answers: 400 ``Invalid
  Value``, reason ``invalid`` at location ``pageToken`` (the changes reference: "If the
  token is rejected for any reason, it should be discarded, and pagination should be
  restarted": https://developers.google.com/drive/api/reference/rest/v3/changes/list);
  errors use the JSON error shape of
  https://developers.google.com/drive/api/guides/handle-errors (401 authError, 403
  insufficientPermissions, 403 userRateLimitExceeded, 404 notFound, 429 + Retry-After).

- the Admin SDK Directory API, served on the same port (a source's ``directory_url``):
  groups.list ``/admin/directory/v1/groups?domain=`` (``groups``: ``id``, ``email``,
  ``name``; ``maxResults`` up to 200, ``pageToken``/``nextPageToken``):
  https://developers.google.com/admin-sdk/directory/reference/rest/v1/groups/list;
  members.list ``/admin/directory/v1/groups/{groupKey}/members`` (groupKey: the email or
  id; ``members``: ``email``, ``type`` USER/GROUP/CUSTOMER, ``role``, ``status``; no
  ``members`` key for an empty group; 404 ``notFound`` for an unknown key):
  https://developers.google.com/admin-sdk/directory/reference/rest/v1/members/list;
  a token without ``admin.directory.group.readonly`` answers 403
  ``insufficientPermissions`` (with ``ACCESS_TOKEN_SCOPE_INSUFFICIENT`` in ``details``),
  a non-administrator 403 ``forbidden`` "Not Authorized to access this resource/api";
  a group of another domain answers 403 ``forbidden`` too.

The state is in memory; tests mutate it with ``put``, ``trash``, ``remove`` and
``share``; every mutation appends a change, as Drive does.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from fakes._server import Answer, FakeService

TOKEN = "good-token"
ROOT_ID = "0AROOTfolder"  # My Drive's root folder (files.get alias ``root``)
FOLDER = "application/vnd.google-apps.folder"
BASE_TIME = datetime(2024, 3, 1, tzinfo=UTC)


def google_error(status: int, reason: str, message: str) -> dict[str, Any]:
    return {"error": {"code": status, "message": message, "errors": [{"reason": reason}]}}


@dataclass
class DriveFile:
    id: str
    name: str
    mime: str
    content: bytes
    modified: datetime
    drive_id: str | None = None
    trashed: bool = False
    permissions: list[dict[str, Any]] = field(default_factory=list)
    parents: list[str] = field(default_factory=list)

    def resource(self, inline_permissions: bool) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": self.id,
            "name": self.name,
            "mimeType": self.mime,
            "modifiedTime": self.modified.isoformat().replace("+00:00", "Z"),
            "trashed": self.trashed,
            "webViewLink": f"https://drive.google.com/file/d/{self.id}/view",
        }
        if not self.mime.startswith("application/vnd.google-apps."):
            body["md5Checksum"] = f"md5-{hash(self.content) & 0xFFFFFFFF:08x}"
            body["size"] = str(len(self.content))
        if self.parents:
            body["parents"] = list(self.parents)
        if self.drive_id:
            body["driveId"] = self.drive_id
        elif inline_permissions:
            body["permissions"] = self.permissions
        return body


class FakeDrive(FakeService):
    """Files, shared drives and a change log; ``expire_tokens()`` invalidates old tokens."""

    def __init__(self) -> None:
        super().__init__()
        self.files: dict[str, DriveFile] = {}
        self.drives: dict[str, str] = {}  # id -> name
        self.changes: list[str] = []  # file ids, change n is at index n - 1
        self.epoch = 1  # page tokens are f"{epoch}.{change number}"
        self.scope_ok = True
        self.broken = False  # True: every files.list page after the first answers 500
        self.token_refusal = 410  # the status an expired changes token answers (or 400)
        self.tick = 0
        # the Directory API: group email -> {"id", "name", "members": [(type, email, status)]}
        self.groups: dict[str, dict[str, Any]] = {}
        self.directory_domain = "example.com"  # the domain the token's admin may read
        self.directory_scope_ok = True
        self.directory_admin = True
        self.directory_page = 200  # the most rows a page holds (tests lower it)
        self.channels: dict[str, dict[str, Any]] = {}  # open push channels by id
        self.stopped: list[str] = []  # ids of the channels stopped, in order
        self.now: Callable[[], datetime] = lambda: datetime.now(UTC)  # tests set a clock
        self.max_channel_lifetime = timedelta(days=7)  # the changes resource

    # -- mutations ---------------------------------------------------------------------

    def put(
        self,
        file_id: str,
        name: str,
        content: bytes | str,
        *,
        mime: str = "text/plain",
        drive_id: str | None = None,
        readers: tuple[str, ...] = ("ann@example.com",),
        parent: str | None = None,
    ) -> None:
        """A file (or a folder, ``mime=FOLDER``) in ``parent``: by default the top of My
        Drive, or of its shared drive."""
        with self.lock:
            self.tick += 1
            data = content.encode() if isinstance(content, str) else content
            old = self.files.get(file_id)
            perms = old.permissions if old else [
                {"type": "user", "role": "reader", "emailAddress": r} for r in readers
            ]  # fmt: skip
            self.files[file_id] = DriveFile(
                file_id, name, mime, data, BASE_TIME + timedelta(minutes=self.tick),
                drive_id, False, perms,
                [parent] if parent else old.parents if old else [drive_id or ROOT_ID],
            )  # fmt: skip
            self.changes.append(file_id)

    def trash(self, file_id: str) -> None:
        with self.lock:
            self.files[file_id].trashed = True
            self.changes.append(file_id)

    def remove(self, file_id: str) -> None:
        """Delete for good (or lose access): the change reports ``removed``."""
        with self.lock:
            del self.files[file_id]
            self.changes.append(file_id)

    def share(self, file_id: str, permissions: list[dict[str, Any]]) -> None:
        """Replace a file's permissions: a change, but modifiedTime stays."""
        with self.lock:
            self.files[file_id].permissions = permissions
            self.changes.append(file_id)

    def expire_tokens(self) -> None:
        with self.lock:
            self.epoch += 1  # every token issued so far answers 410

    # -- the API -------------------------------------------------------------------------

    def handle(
        self, method: str, path: str, query: dict[str, str], headers: dict[str, str], body: bytes
    ) -> Answer:
        broken = self.broken or path.startswith("/broken/")  # page 2 of files.list fails
        path = path.removeprefix("/broken")
        if broken and path == "/drive/v3/files" and query.get("pageToken"):
            return 500, google_error(500, "backendError", "Backend Error"), {}
        if headers.get("authorization") != f"Bearer {TOKEN}":
            return 401, google_error(401, "authError", "Invalid Credentials"), {}
        if path.startswith("/admin/directory/v1/groups"):
            return self._directory(path, query)
        if not self.scope_ok:
            return 403, google_error(
                403, "insufficientPermissions", "Request had insufficient authentication scopes."
            ), {}  # fmt: skip
        if path == "/drive/v3/about":
            return 200, {"user": {"emailAddress": "robot@example.com"}}, {}
        if path.startswith("/drive/v3/drives/"):
            drive = path.rsplit("/", 1)[1]
            if drive not in self.drives:
                return 404, google_error(404, "notFound", f"Shared drive not found: {drive}"), {}
            return 200, {"id": drive, "name": self.drives[drive]}, {}
        if path == "/drive/v3/files":
            return self._list(query)
        if path == "/drive/v3/changes/startPageToken":
            return 200, {"startPageToken": self._token(len(self.changes) + 1)}, {}
        if path == "/drive/v3/changes":
            return self._changes(query)
        if path == "/drive/v3/changes/watch" and method == "POST":
            return self._watch(query, body)
        if path == "/drive/v3/channels/stop" and method == "POST":
            request = json.loads(body or b"{}")
            channel = self.channels.get(str(request.get("id")))
            if channel is None or channel["resourceId"] != request.get("resourceId"):
                return 404, google_error(404, "notFound", "Channel not found"), {}
            del self.channels[channel["id"]]
            self.stopped.append(channel["id"])
            return 204, b"", {}
        parts = path.split("/")  # /drive/v3/files/{id}[/export|/permissions]
        if len(parts) == 5 and parts[3] == "files" and parts[4] in ("root", ROOT_ID):
            return 200, {"id": ROOT_ID, "name": "My Drive", "mimeType": FOLDER}, {}
        if len(parts) >= 5 and parts[3] == "files":
            file = self.files.get(parts[4])
            if file is None:
                return 404, google_error(404, "notFound", f"File not found: {parts[4]}."), {}
            if len(parts) == 6 and parts[5] == "permissions":
                return 200, {"permissions": file.permissions}, {}
            if len(parts) == 6 and parts[5] == "export":
                if not file.mime.startswith("application/vnd.google-apps."):
                    return 403, google_error(
                        403, "fileNotExportable", "Only Google Docs can be exported"
                    ), {}  # fmt: skip
                return 200, file.content, {"Content-Type": query.get("mimeType", "text/plain")}
            if query.get("alt") == "media":
                return 200, file.content, {"Content-Type": file.mime}
            return 200, file.resource(True), {}
        return 404, google_error(404, "notFound", f"no route {path}"), {}

    def _watch(self, query: dict[str, str], raw: bytes) -> Answer:
        body = json.loads(raw or b"{}")
        if not query.get("pageToken"):
            return 400, google_error(400, "required", "Required parameter: pageToken"), {}
        if body.get("type") != "web_hook" or not str(body.get("address", "")).startswith(
            "https://"
        ):
            return 400, google_error(400, "invalid", "type web_hook and an https address"), {}
        if body.get("id") in self.channels:
            return 400, google_error(400, "channelIdNotUnique", "Channel id not unique"), {}
        now = self.now()
        cap = now + self.max_channel_lifetime
        asked = int(body.get("expiration") or int(cap.timestamp() * 1000))
        granted = min(asked, int(cap.timestamp() * 1000))
        scope = query.get("driveId", "")
        channel = {"kind": "api#channel", "id": body["id"], "resourceId": f"res-{scope or 'all'}",
                   "resourceUri": f"{self.url}/drive/v3/changes?pageToken={query['pageToken']}",
                   "token": body.get("token"), "expiration": str(granted),
                   "address": body["address"], "driveId": scope}  # fmt: skip
        self.channels[channel["id"]] = channel
        return 200, channel, {}

    def add_group(
        self, email: str, name: str, members: list[tuple[str, str] | tuple[str, str, str]]
    ) -> None:
        """A group with members ``(type, email[, status])``, type USER, GROUP or CUSTOMER."""
        rows = [(m[0], m[1], m[2] if len(m) == 3 else "ACTIVE") for m in members]
        with self.lock:
            self.groups[email] = {"id": f"0{len(self.groups) + 1:08d}", "name": name,
                                  "members": rows}  # fmt: skip

    def _directory(self, path: str, query: dict[str, str]) -> Answer:
        if not self.directory_scope_ok:
            body = google_error(403, "insufficientPermissions", "Request had insufficient "
                                "authentication scopes.")  # fmt: skip
            body["error"]["status"] = "PERMISSION_DENIED"
            body["error"]["details"] = [{
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "ACCESS_TOKEN_SCOPE_INSUFFICIENT",
            }]  # fmt: skip
            return 403, body, {}
        forbidden = (
            403,
            google_error(403, "forbidden", "Not Authorized to access this resource/api"),
            {},
        )
        if not self.directory_admin:
            return forbidden
        size = min(int(query.get("maxResults", "200")), 200, self.directory_page)
        start = int(query.get("pageToken") or 0)
        parts = path.split("/")  # ['', 'admin', 'directory', 'v1', 'groups', key, 'members']
        if len(parts) == 5:
            if query.get("domain") != self.directory_domain:
                return forbidden
            rows = [{"kind": "admin#directory#group", "id": g["id"], "email": e,
                     "name": g["name"]} for e, g in sorted(self.groups.items())
                    if e.endswith("@" + self.directory_domain)]  # fmt: skip
            key = "groups"
        elif len(parts) == 7 and parts[6] == "members":
            found = next((e for e, g in self.groups.items() if parts[5] in (e, g["id"])), None)
            if found is None:
                return 404, google_error(404, "notFound", "Resource Not Found: groupKey"), {}
            if not found.endswith("@" + self.directory_domain):
                return forbidden
            rows = [{"kind": "admin#directory#member", "email": m, "type": t, "role": "MEMBER",
                     "status": s, "id": f"id-{m}"}
                    for t, m, s in self.groups[found]["members"]]  # fmt: skip
            key = "members"
        else:
            return 404, google_error(404, "notFound", f"no route {path}"), {}
        out: dict[str, Any] = {"kind": f"admin#directory#{key}", "etag": '"e"'}
        if rows[start : start + size]:
            out[key] = rows[start : start + size]
        if start + size < len(rows):
            out["nextPageToken"] = str(start + size)
        return 200, out, {}

    def _token(self, number: int) -> str:
        return f"{self.epoch}.{number}"

    def _visible(self, query: dict[str, str]) -> list[DriveFile]:
        drive = query.get("driveId")
        found = [f for f in self.files.values() if drive is None or f.drive_id == drive]
        if query.get("q") == "trashed = false":
            found = [f for f in found if not f.trashed]
        return sorted(found, key=lambda f: f.id)

    def _list(self, query: dict[str, str]) -> Answer:
        size = int(query.get("pageSize", "100"))
        start = int(query.get("pageToken") or 0)
        files = self._visible(query)
        page = files[start : start + size]
        out: dict[str, Any] = {"files": [f.resource(True) for f in page], "incompleteSearch": False}
        if start + size < len(files):
            out["nextPageToken"] = str(start + size)
        return 200, out, {}

    def _changes(self, query: dict[str, str]) -> Answer:
        epoch, _, number_text = query["pageToken"].partition(".")
        token = int(number_text)
        if int(epoch) != self.epoch and self.token_refusal == 400:
            invalid = {"domain": "global", "reason": "invalid", "message": "Invalid Value",
                       "locationType": "parameter", "location": "pageToken"}  # fmt: skip
            return 400, {"error": {"code": 400, "message": "Invalid Value",
                                   "errors": [invalid]}}, {}  # fmt: skip
        if int(epoch) != self.epoch:
            return 410, google_error(410, "deleted", "The page token is no longer valid."), {}
        size = int(query.get("pageSize", "100"))
        drive = query.get("driveId")
        entries: list[dict[str, Any]] = []
        number = token
        while number <= len(self.changes) and len(entries) < size:
            file_id = self.changes[number - 1]
            number += 1
            file = self.files.get(file_id)
            if drive is not None and file is not None and file.drive_id != drive:
                continue
            change: dict[str, Any] = {"changeType": "file", "fileId": file_id}
            change["removed"] = file is None
            if file is not None:
                change["file"] = file.resource(True)
            entries.append(change)
        out: dict[str, Any] = {"changes": entries}
        if number <= len(self.changes):
            out["nextPageToken"] = self._token(number)
        else:
            out["newStartPageToken"] = self._token(len(self.changes) + 1)
        return 200, out, {}
