"""A fake Microsoft Graph (sites, drives, delta, permissions, groups) on 127.0.0.1.

Follows the documented behaviour of:
- GET /sites/{hostname}:/{path}: https://learn.microsoft.com/en-us/graph/api/site-getbypath
- GET /sites/{id}/drives: https://learn.microsoft.com/en-us/graph/api/drive-list
- GET /drives/{id}/root/delta: https://learn.microsoft.com/en-us/graph/api/driveitem-delta
  (``@odata.nextLink`` pages, a final ``@odata.deltaLink``; deleted items carry a
  ``deleted`` facet; an expired token answers 410 Gone with code ``resyncRequired``;
  permission changes appear only with ``Prefer: deltashowsharingchanges``, marked
  ``@microsoft.graph.sharedChanged``:
  https://learn.microsoft.com/en-us/onedrive/developer/rest-api/concepts/scan-guidance)
- GET /drives/{d}/items/{i} (404 itemNotFound once deleted):
  https://learn.microsoft.com/en-us/graph/api/driveitem-get
- GET /drives/{d}/items/{i}/content answers 302 to a download URL:
  https://learn.microsoft.com/en-us/graph/api/driveitem-get-content
- GET /drives/{d}/items/{i}/permissions:
  https://learn.microsoft.com/en-us/graph/api/driveitem-list-permissions
- change-notification subscriptions: POST /subscriptions (201; ``changeType`` "updated"
  on ``drives/{id}/root``, an ``https`` ``notificationUrl``, ``expirationDateTime`` in the
  future and at most 42,300 minutes ahead for drive items, else 400):
  https://learn.microsoft.com/en-us/graph/api/subscription-post-subscriptions and
  https://learn.microsoft.com/en-us/graph/api/resources/subscription#subscription-lifetime;
  PATCH /subscriptions/{id} with a new ``expirationDateTime`` (200; 404 once expired or
  deleted): https://learn.microsoft.com/en-us/graph/api/subscription-update. Creating one
  does not call the ``notificationUrl`` here (Graph's validation request is the hook
  endpoint's part, tested in tests/api/test_api_hooks.py).
- GET /groups, /groups/{id}/members: https://learn.microsoft.com/en-us/graph/api/group-list-members
- throttling: 429 with Retry-After: https://learn.microsoft.com/en-us/graph/throttling;
  errors as ``{"error": {"code", "message"}}`` (401 InvalidAuthenticationToken, 403
  accessDenied, 404 itemNotFound).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from fakes._server import Answer, FakeService

TOKEN = "graph-token"
SITE = "contoso.sharepoint.com:/sites/team"
BASE_TIME = datetime(2024, 3, 1, tzinfo=UTC)


def graph_error(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


def user_grant(email: str) -> dict[str, Any]:
    return {"id": f"p-{email}", "roles": ["read"], "grantedToV2": {"user": {"email": email}}}


@dataclass
class Item:
    id: str
    name: str
    mime: str
    content: bytes
    seq: int
    perm_seq: int = 0
    deleted: bool = False
    modified: datetime = BASE_TIME
    permissions: list[dict[str, Any]] = field(default_factory=list)

    def resource(self, drive: str, shared_changed: bool) -> dict[str, Any]:
        if self.deleted:
            return {"id": self.id, "deleted": {"state": "deleted"}}
        body: dict[str, Any] = {
            "id": self.id,
            "name": self.name,
            "cTag": f'"c:{{{self.id}}},{hash(self.content) & 0xFFFF:04x}"',
            "eTag": f'"{{{self.id}}},{self.seq}"',
            "size": len(self.content),
            "lastModifiedDateTime": self.modified.isoformat().replace("+00:00", "Z"),
            "webUrl": f"https://contoso.sharepoint.com/sites/team/{drive}/{self.name}",
            "parentReference": {"driveId": drive, "path": f"/drives/{drive}/root:"},
            "file": {"mimeType": self.mime},
        }
        if shared_changed:
            body["@microsoft.graph.sharedChanged"] = "True"
        return body


class FakeGraph(FakeService):
    def __init__(self) -> None:
        super().__init__()
        self.drives: dict[str, str] = {"lib1": "Documents", "lib2": "Policies"}
        self.items: dict[str, dict[str, Item]] = {d: {} for d in self.drives}
        self.groups: dict[str, tuple[str, list[str]]] = {}  # id -> (mail, member emails)
        self.nested: dict[str, list[str]] = {}  # group id -> ids of groups that are members
        self.seq = 0
        self.epoch = 1
        self.broken = False  # True: every delta page after the first answers 500
        self.denied = False  # True: 403 accessDenied (the app lacks Sites.Read.All)
        self.subscriptions: dict[str, dict[str, Any]] = {}  # id -> the subscription resource
        self.now: Callable[[], datetime] = lambda: datetime.now(UTC)  # tests set a clock
        self.max_lifetime = timedelta(minutes=42300)  # driveItem subscriptions

    # -- mutations ---------------------------------------------------------------------

    def put(self, drive: str, item_id: str, name: str, text: str, *,
            readers: tuple[str, ...] = ("ann@contoso.com",)) -> None:  # fmt: skip
        with self.lock:
            self.seq += 1
            old = self.items[drive].get(item_id)
            perms = old.permissions if old else [user_grant(r) for r in readers]
            kinds = {".md": "text/markdown", ".png": "image/png"}
            mime = kinds.get(name[name.rfind(".") :], "text/plain")
            self.items[drive][item_id] = Item(
                item_id, name, mime, text.encode(), self.seq, 0, False,
                BASE_TIME + timedelta(minutes=self.seq), perms,
            )  # fmt: skip

    def delete(self, drive: str, item_id: str) -> None:
        with self.lock:
            self.seq += 1
            item = self.items[drive][item_id]
            item.deleted, item.seq = True, self.seq

    def share(self, drive: str, item_id: str, permissions: list[dict[str, Any]]) -> None:
        with self.lock:
            self.seq += 1
            item = self.items[drive][item_id]
            item.permissions, item.perm_seq = permissions, self.seq

    def expire_tokens(self) -> None:
        with self.lock:
            self.epoch += 1

    # -- the API -------------------------------------------------------------------------

    def handle(
        self, method: str, path: str, query: dict[str, str], headers: dict[str, str], body: bytes
    ) -> Answer:
        if path.startswith("/download/"):  # the pre-authenticated URL: no bearer token
            _, _, drive, item_id = path.split("/")
            return 200, self.items[drive][item_id].content, {"Content-Type": "text/plain"}
        if headers.get("authorization") != f"Bearer {TOKEN}":
            return 401, graph_error("InvalidAuthenticationToken", "Access token is invalid."), {}
        if self.denied:
            return 403, graph_error("accessDenied", "Either scp or roles claim is needed."), {}
        path = path.removeprefix("/v1.0")
        if path.startswith("/subscriptions"):
            return self._subscription(method, path, body)
        if path.startswith("/sites/"):
            rest = path.removeprefix("/sites/")
            if rest == SITE:
                return (
                    200,
                    {"id": "site1", "webUrl": "https://contoso.sharepoint.com/sites/team"},
                    {},
                )
            if rest == "site1/drives":
                drives = [{"id": d, "name": n, "driveType": "documentLibrary"}
                          for d, n in self.drives.items()]  # fmt: skip
                return 200, {"value": drives}, {}
            return 404, graph_error("itemNotFound", "Requested site could not be found"), {}
        if path.startswith("/groups"):
            return self._groups(path)
        parts = path.split("/")  # ['', 'drives', d, 'root'|'items', ...]
        if len(parts) < 4 or parts[1] != "drives" or parts[2] not in self.items:
            return 404, graph_error("itemNotFound", f"no route {path}"), {}
        drive = parts[2]
        if parts[3:] == ["root", "delta"]:
            return self._delta(drive, query, headers)
        item = self.items[drive].get(parts[4]) if len(parts) > 4 else None
        if item is None or item.deleted:
            return 404, graph_error("itemNotFound", "The resource could not be found."), {}
        if parts[5:] == ["permissions"]:
            return 200, {"value": item.permissions}, {}
        if parts[5:] == ["content"]:
            return 302, b"", {"Location": f"{self.url}/download/{drive}/{item.id}"}
        return 200, item.resource(drive, False), {}

    def _delta(self, drive: str, query: dict[str, str], headers: dict[str, str]) -> Answer:
        token = query.get("token")
        since = 0
        if token is not None:
            epoch, _, number = token.partition(".")
            if int(epoch) != self.epoch:
                return 410, graph_error("resyncRequired", "Resync required."), {
                    "Location": f"{self.url}/v1.0/drives/{drive}/root/delta"
                }  # fmt: skip
            since = int(number)
        skip = int(query.get("$skiptoken") or 0)
        if skip and self.broken:
            return 500, graph_error("generalException", "An error occurred."), {}
        sharing = "deltashowsharingchanges" in headers.get("prefer", "")
        rows: list[dict[str, Any]] = []
        for item in sorted(self.items[drive].values(), key=lambda i: i.id):
            if (token is None and not item.deleted) or (token is not None and item.seq > since):
                rows.append(item.resource(drive, False))
            elif token is not None and sharing and item.perm_seq > since and not item.deleted:
                rows.append(item.resource(drive, True))
        if token is None:  # a full delta starts with the root folder
            rows.insert(0, {"id": "root", "name": "root", "folder": {}, "root": {}})
        top = int(query.get("$top") or 200)
        page = rows[skip : skip + top]
        base = f"{self.url}/v1.0/drives/{drive}/root/delta"
        out: dict[str, Any] = {"value": page}
        if skip + top < len(rows):
            keep = f"token={token}&" if token else ""
            out["@odata.nextLink"] = f"{base}?{keep}$top={top}&$skiptoken={skip + top}"
        else:
            out["@odata.deltaLink"] = f"{base}?token={self.epoch}.{self.seq}"
        return 200, out, {}

    def _subscription(self, method: str, path: str, raw: bytes) -> Answer:
        body = json.loads(raw or b"{}")
        now = self.now()
        expires_text = str(body.get("expirationDateTime", ""))
        try:
            expires = datetime.fromisoformat(expires_text.replace("Z", "+00:00"))
        except ValueError:
            return (
                400,
                graph_error("InvalidRequest", f"bad expirationDateTime {expires_text!r}"),
                {},
            )
        if not now < expires <= now + self.max_lifetime:
            minutes = int(self.max_lifetime.total_seconds() // 60)
            return 400, graph_error("InvalidRequest", "Subscription expiration can only be "
                                    f"{minutes} minutes in the future."), {}  # fmt: skip
        if method == "POST" and path == "/subscriptions":
            drive = str(body.get("resource", "")).removeprefix("drives/").removesuffix("/root")
            if body.get("changeType") != "updated" or drive not in self.drives:
                return 400, graph_error("InvalidRequest", "unsupported resource or changeType"), {}
            if not str(body.get("notificationUrl", "")).startswith("https://"):
                return 400, graph_error("InvalidRequest", "notificationUrl must be https"), {}
            sub = {"id": str(uuid.uuid4()), **body,
                   "expirationDateTime": expires.isoformat().replace("+00:00", "Z")}  # fmt: skip
            self.subscriptions[sub["id"]] = sub
            return 201, sub, {}
        sub_id = path.removeprefix("/subscriptions/")
        sub = self.subscriptions.get(sub_id)
        if method != "PATCH" or sub is None or self.expired(sub_id):
            return 404, graph_error("ResourceNotFound", f"subscription {sub_id} not found"), {}
        sub["expirationDateTime"] = expires.isoformat().replace("+00:00", "Z")
        return 200, sub, {}

    def expired(self, sub_id: str) -> bool:
        """Whether subscription ``sub_id`` has run out (Graph then deletes it)."""
        when = self.subscriptions[sub_id]["expirationDateTime"].replace("Z", "+00:00")
        return datetime.fromisoformat(when) <= self.now()

    def _groups(self, path: str) -> Answer:
        if path == "/groups":
            value = [{"id": g, "mail": mail, "displayName": g} for g, (mail, _) in
                     sorted(self.groups.items())]  # fmt: skip
            return 200, {"value": value}, {}
        # https://learn.microsoft.com/en-us/graph/api/group-list-members: directory objects,
        # each with its @odata.type (users, and groups nested in this one)
        group = path.split("/")[2]
        members: list[dict[str, str]] = [
            {"@odata.type": "#microsoft.graph.user", "id": f"u-{m}", "mail": m,
             "userPrincipalName": m} for m in self.groups[group][1]
        ]  # fmt: skip
        members += [
            {"@odata.type": "#microsoft.graph.group", "id": child, "mail": self.groups[child][0]}
            for child in self.nested.get(group, [])
        ]
        return 200, {"value": members}, {}
