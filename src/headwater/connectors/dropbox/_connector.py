"""The Dropbox connector: the files under a folder of one account (or team member).

The first run lists the folder recursively (``files/list_folder``, then
``files/list_folder/continue`` while ``has_more``), a checkpoint after every page holding
the cursor; the last cursor is kept, and later runs continue from it, receiving only the
changes: new and changed files, and ``deleted`` entries (a delete). A cursor Dropbox
resets (409 ``reset``) lists the folder again from scratch. A file's version is its
``rev``; its bytes are downloaded by rev, only when it changed. Readers: the members of
the shared folder holding the file (users by email, team groups as groups; pending
invitees left out), else the account's owner. A file whose shared folder's members
cannot be read fails closed. ``enumerate()`` lists the folder afresh for deletes the
cursor cannot show (files under a deleted folder). A file's ``hierarchy`` is its
``path_display`` from the account's root (``Docs/Team/Guide.md``), the case Dropbox shows.
See docs/connectors/dropbox.md.
"""

from __future__ import annotations

import json
import mimetypes
from collections.abc import Iterator
from datetime import datetime
from typing import Any, ClassVar

from pydantic import Field

from headwater.clock import as_utc
from headwater.connectors._bearer import BearerApiOptions
from headwater.connectors._governed import governed_transport
from headwater.connectors.base import ConnectorCapabilities, ReadStream, SourceContext
from headwater.connectors.dropbox._client import DropboxClient, EndpointError
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


def principal_for_group(source_id: str, name: str) -> str:
    """The group principal of a Dropbox team group ``group:{group_id}``."""
    return f"{source_id}:group:{name}"


class DropboxOptions(BearerApiOptions):
    """The keys of a ``dropbox`` source."""

    path: str = Field(default="", pattern=r"^(/.*)?$")  # "" is the root
    include: list[str] = Field(default_factory=list)
    exclude: list[str] = Field(default_factory=list)
    member_id: str | None = None  # a team token acting as this member
    team_groups: bool = False  # list the team's groups (a team token with groups.read)
    api_url: str = Field(default="https://api.dropboxapi.com", pattern=r"^https?://")
    content_url: str = Field(default="https://content.dropboxapi.com", pattern=r"^https?://")
    page_size: int = Field(default=2000, ge=1, le=2000)


class DropboxConnector:
    """Reads the files under one Dropbox folder."""

    type_name: ClassVar[str] = "dropbox"
    capabilities: ClassVar[ConnectorCapabilities] = ConnectorCapabilities()
    Options: ClassVar[type[DropboxOptions]] = DropboxOptions

    def __init__(self, options: DropboxOptions, context: SourceContext) -> None:
        self.options = options
        self._source_id = context.source_id
        self._keys = KeyFilter(options.include, options.exclude)
        self._client = DropboxClient(
            options.api_url.rstrip("/"),
            options.content_url.rstrip("/"),
            token=options.token.get_secret_value(),
            select_user=options.member_id,
            timeout=options.timeout,
            user_agent=context.user_agent,
            transport=governed_transport(context, "dropbox", options.token.get_secret_value()),
            policy=options.retry_policy(),
        )
        self._owner: str | None = None
        self._folders: dict[str, Access] = {}

    def validate(self) -> None:
        """Who the token is, and that the folder exists, without retries."""
        once = RetryPolicy(attempts=1)
        try:
            self._client.rpc("users/get_current_account", None, policy=once)
            if self.options.path:
                try:
                    self._client.rpc("files/get_metadata", {"path": self.options.path}, policy=once)
                except EndpointError as exc:
                    raise ConfigError(
                        f"dropbox `path`: {self.options.path!r} is not a folder the token sees "
                        f'({exc.tag}); fix `path` ("" for the root)'
                    ) from exc
        except TransientError as exc:
            raise TransientError(
                f"dropbox `api_url` {self.options.api_url}: {exc}; expected the Dropbox API "
                "answering there; try again later"
            ) from exc

    def _start(self) -> dict[str, Any]:
        body = {"path": self.options.path, "recursive": True, "limit": self.options.page_size}
        return self._client.rpc("files/list_folder", body)

    def read(
        self, window: Window, checkpoint: Checkpoint | None, known: KnownVersions
    ) -> ReadStream:
        """Yield the folder's files (first run) or its changes since the saved cursor."""
        cursor = json.loads(checkpoint.cursor).get("cursor") if checkpoint else None
        try:
            page = (
                self._client.rpc("files/list_folder/continue", {"cursor": cursor})
                if cursor
                else self._start()
            )
        except EndpointError as exc:
            if exc.tag != "reset":
                raise
            page = self._start()  # the cursor was reset: list the folder again
        while True:
            for entry in page.get("entries") or []:
                item = self._item(entry)
                if item is not None:
                    yield item
            cursor = str(page["cursor"])
            if not page.get("has_more"):
                break
            yield Checkpoint(json.dumps({"cursor": cursor}))
            page = self._client.rpc("files/list_folder/continue", {"cursor": cursor})
        return Checkpoint(json.dumps({"cursor": cursor}))

    def _item(self, entry: dict[str, Any]) -> SourceItem | None:
        kind, path = entry.get(".tag"), str(entry.get("path_lower", ""))
        if not self._keys(path.lstrip("/")):
            return None
        if kind == "deleted":
            return Deleted(path)
        if kind != "file":
            return None
        locator = f"https://www.dropbox.com/home{entry.get('path_display', path)}"
        try:
            access = self._access(entry)
        except (TransientError, ItemError) as exc:
            return Failure(
                path,
                locator,
                Stage.FETCH.value,
                "acl_unavailable",
                f"dropbox {path}: its shared folder's members could not be read ({exc}); "
                "not indexed with a guessed ACL; the next sync tries again",
            )
        modified = entry.get("server_modified")
        return SourceDocument(
            object_id=path,
            locator=locator,
            title="",  # the parser finds the title; else the core uses the path
            version=str(entry["rev"]),
            fetch_ref=str(entry["rev"]),
            media_type=mimetypes.guess_type(path)[0],
            updated_at=as_utc(datetime.fromisoformat(str(modified).replace("Z", "+00:00")))
            if modified
            else None,
            metadata={
                "size": str(entry.get("size", 0)),
                "id": str(entry.get("id", "")),
                HIERARCHY_KEY: str(entry.get("path_display") or path).strip("/"),
            },
            access=access,
        )

    def _access(self, entry: dict[str, Any]) -> Access:
        shared = (entry.get("sharing_info") or {}).get("parent_shared_folder_id")
        if not shared:
            if self._owner is None:
                self._owner = str(self._client.rpc("users/get_current_account", None)["email"])
            return Access(users=(self._owner,))
        if shared not in self._folders:
            answer = self._client.rpc("sharing/list_folder_members", {"shared_folder_id": shared})
            users: set[str] = set()
            groups: set[str] = set()
            while True:
                users |= {
                    str(u["user"]["email"])
                    for u in answer.get("users") or []
                    if (u.get("user") or {}).get("email")
                }
                groups |= {
                    principal_for_group(self._source_id, f"group:{g['group']['group_id']}")
                    for g in answer.get("groups") or []
                }
                if not answer.get("cursor"):
                    break
                answer = self._client.rpc(
                    "sharing/list_folder_members/continue", {"cursor": answer["cursor"]}
                )
            self._folders[shared] = Access(users=tuple(sorted(users)), groups=tuple(sorted(groups)))
        return self._folders[shared]

    def fetch(self, ref: str) -> bytes:
        """The bytes of the file revision ``ref``."""
        return self._client.download(ref)

    def enumerate(self) -> Iterator[str]:
        """Every file under the folder now (a fresh listing); raises if a page fails."""
        page = self._start()
        while True:
            for entry in page.get("entries") or []:
                path = str(entry.get("path_lower", ""))
                if entry.get(".tag") == "file" and self._keys(path.lstrip("/")):
                    yield path
            if not page.get("has_more"):
                return
            page = self._client.rpc("files/list_folder/continue", {"cursor": page["cursor"]})

    def in_scope(self, object_id: str) -> bool:
        """Whether ``object_id`` lies under `path` and passes include/exclude."""
        root = self.options.path.lower().rstrip("/")
        return object_id.startswith(root + "/") and self._keys(object_id.lstrip("/"))

    def groups(self) -> Iterator[ListedGroup]:
        """The team's groups with their members' emails (``team_groups``), else none."""
        if not self.options.team_groups:
            return
        answer = self._client.rpc("team/groups/list", {"limit": 1000}, as_team=True)
        found = list(answer.get("groups") or [])
        while answer.get("has_more"):
            answer = self._client.rpc(
                "team/groups/list/continue", {"cursor": answer["cursor"]}, as_team=True
            )
            found += answer.get("groups") or []
        for group in found:
            gid = str(group["group_id"])
            body = {"group": {".tag": "group_id", "group_id": gid}, "limit": 1000}
            answer = self._client.rpc("team/groups/members/list", body, as_team=True)
            members = list(answer.get("members") or [])
            while answer.get("has_more"):
                more = {"cursor": answer["cursor"]}
                answer = self._client.rpc("team/groups/members/list/continue", more, as_team=True)
                members += answer.get("members") or []
            emails = sorted(
                {
                    str(m["profile"]["email"])
                    for m in members
                    if (m.get("profile") or {}).get("email")
                }
            )
            yield ListedGroup(
                principal_for_group(self._source_id, f"group:{gid}"),
                emails,
                display_name=str(group.get("group_name") or gid),
            )
