"""The Drive connector: a full ``files.list`` once, then ``changes.list`` from its token.

The first run (and any run whose token Drive no longer accepts) asks for a
``startPageToken`` *before* listing every file, so a change made during the listing is
read by the next run rather than lost. Later runs read ``changes.list`` from the saved
token: ``removed`` and trashed files become ``Deleted`` items, every other change is the
file's current state (a content edit, a rename or a permission change). A token Drive
answers with HTTP 410 Gone (or refuses as an invalid ``pageToken``, HTTP 400) is replaced by a
full enumeration of that scope, never a silent gap; ``enumerate()`` lists every current id
so the runner prunes what the full listing no longer holds. The cursor lives only in the
checkpoint: ``{"tokens": {scope: token}}`` plus, mid-run, the scope and page in progress. A
scope is ``""`` (everything the token sees, ``corpora=allDrives``) or one shared drive id
from ``shared_drives``. With ``groups_domain`` set, ``groups()`` lists that Workspace
domain's groups and members, nested groups included, through the Directory API
(``_directory``).

A file's ``hierarchy`` is the names of the folders above it, from the top of My Drive or
of its shared drive (neither root is named), then its own name: ``parents`` read up
through ``files.get`` of each folder, once per folder and run. A chain that reaches a
folder the token cannot see starts at the highest one it can. Moving or renaming a folder
reaches the paths of the files inside when they next change or are listed in full.
"""

from __future__ import annotations

import json
from collections.abc import Generator, Iterator, Sequence
from datetime import datetime
from typing import Any, ClassVar

from headwater.connectors._governed import governed_transport
from headwater.connectors.base import (
    ConnectorCapabilities,
    ReadStream,
    SourceContext,
    Subscription,
)
from headwater.connectors.gdrive import _channels as channels
from headwater.connectors.gdrive._acl import file_access
from headwater.connectors.gdrive._client import (
    FILE_FIELDS,
    DriveClient,
    raise_for_status,
    token_refused,
)
from headwater.connectors.gdrive._directory import DirectoryGroups
from headwater.connectors.gdrive._options import GdriveOptions
from headwater.connectors.gdrive._refetch import refetch
from headwater.errors import ConfigError, ItemError, TransientError
from headwater.pipeline.parse import parser_for
from headwater.retry import RetryPolicy
from headwater.scopes import HIERARCHY_KEY, MAX_DEPTH
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

FOLDER = "application/vnd.google-apps.folder"
EXPORTS: dict[str, str] = {  # files.export target per Google Workspace type
    "application/vnd.google-apps.document": "text/plain",
    "application/vnd.google-apps.presentation": "text/plain",
    "application/vnd.google-apps.spreadsheet": "text/csv",
}
COMMON = {"supportsAllDrives": "true", "includeItemsFromAllDrives": "true"}


class GdriveConnector:
    """Reads the files one Drive token sees, incrementally through the changes feed."""

    type_name: ClassVar[str] = "gdrive"
    capabilities: ClassVar[ConnectorCapabilities] = ConnectorCapabilities(
        windowed=False, full_listing=False
    )
    Options: ClassVar[type[GdriveOptions]] = GdriveOptions

    def __init__(self, options: GdriveOptions, context: SourceContext) -> None:
        self.options = options
        self.source_id = context.source_id
        policy = options.retry_policy()
        self._client = DriveClient(
            options.base_url,
            options.token.get_secret_value(),
            timeout=options.timeout,
            user_agent=context.user_agent,
            transport=governed_transport(context, "gdrive", options.token.get_secret_value()),
            policy=policy,
        )
        self._scopes: list[str] = list(options.shared_drives) or [""]
        self._lifetime = options.lifetime()
        self._directory = (
            DirectoryGroups(
                DriveClient(
                    options.directory_url,
                    options.token.get_secret_value(),
                    timeout=options.timeout,
                    user_agent=context.user_agent,
                    policy=policy,
                ),
                context.source_id,
                options.groups_domain,
            )
            if options.groups_domain
            else None
        )
        self.lists_groups = self._directory is not None  # read by ``lists_groups``
        self._root: str | None = None  # My Drive's root folder id, asked once
        self._folders: dict[str, tuple[str, str | None]] = {}  # id -> (name, parent)

    # -- validate -------------------------------------------------------------------------

    def validate(self) -> None:
        """Ask Drive who the credentials are, once, without retries."""
        once = RetryPolicy(attempts=1)
        path = "/drive/v3/about"
        try:
            response = self._client.get(path, {"fields": "user"}, policy=once)
            raise_for_status(response, path)
            for drive in self.options.shared_drives:
                path = f"/drive/v3/drives/{drive}"
                response = self._client.get(path, {}, policy=once)
                if response.status_code == 404:
                    raise ConfigError(
                        f"gdrive `shared_drives` names {drive!r}, which the token cannot see "
                        "(HTTP 404); expected a shared drive id; fix the id or add the "
                        "account as a member of that shared drive"
                    )
                raise_for_status(response, path)
            if self._directory is not None:
                path = "/admin/directory/v1/groups"
                self._directory.check()
        except TransientError as exc:
            raise TransientError(
                f"gdrive `base_url` {self.options.base_url}: {exc}; check the address and "
                "try again later"
            ) from exc
        except ItemError as exc:
            raise ConfigError(f"gdrive {path}: {exc}; check `base_url` and `token`") from exc

    # -- read -----------------------------------------------------------------------------

    def read(
        self, window: Window, checkpoint: Checkpoint | None, known: KnownVersions
    ) -> ReadStream:
        """Yield the files changed since the saved change tokens (all files on a first run)."""
        state = json.loads(checkpoint.cursor) if checkpoint else {}
        self._folders.clear()  # a folder renamed since the last run is read again
        tokens: dict[str, str] = dict(state.get("tokens", {}))
        done: list[str] = list(state.get("done", []))
        pending: dict[str, str] = state.get("pending") or {}
        for index, scope in enumerate(self._scopes):
            if scope in done:
                continue
            here = pending if pending.get("scope") == scope else {}
            if here.get("mode") == "changes" or (not here and scope in tokens):
                page = here.get("page") or tokens[scope]
                new_token = yield from self._changes(scope, page, tokens, done)
            else:
                new_token = yield from self._full(scope, here, tokens, done)
            tokens[scope] = new_token
            done.append(scope)
            if index + 1 < len(self._scopes):
                yield Checkpoint(json.dumps({"tokens": tokens, "done": done}))
        return Checkpoint(json.dumps({"tokens": {s: tokens[s] for s in self._scopes}}))

    def _mark(self, tokens: dict[str, str], done: list[str], **pending: str) -> Checkpoint:
        return Checkpoint(json.dumps({"tokens": tokens, "done": done, "pending": pending}))

    def _full(
        self, scope: str, here: dict[str, str], tokens: dict[str, str], done: list[str]
    ) -> Generator[SourceItem, None, str]:
        """Every file of one scope; returns the start token taken before the listing."""
        start = here.get("start") or self._start_token(scope)
        page = here.get("page")
        while True:
            body = self._files_page(scope, page, FILE_FIELDS)
            for file in body.get("files", []):
                if self._selected(file):
                    yield self._document(file)
            page = body.get("nextPageToken")
            if not page:
                return start
            yield self._mark(tokens, done, scope=scope, mode="full", page=page, start=start)

    def _changes(
        self, scope: str, page: str, tokens: dict[str, str], done: list[str]
    ) -> Generator[SourceItem, None, str]:
        """Changes since ``page``; returns the next start token. A refused token lists all."""
        while True:
            params = {**COMMON, "pageToken": page, "pageSize": str(self.options.page_size)}
            params["fields"] = (
                f"nextPageToken,newStartPageToken,changes(changeType,removed,fileId,file({FILE_FIELDS}))"
            )
            if scope:
                params["driveId"] = scope
            response = self._client.get("/drive/v3/changes", params)
            if token_refused(response):  # 410, or 400 at pageToken: enumerate, never skip
                return (yield from self._full(scope, {}, tokens, done))
            raise_for_status(response, "/drive/v3/changes")
            body = response.json()
            for change in body.get("changes", []):
                if change.get("changeType", "file") != "file":
                    continue  # a shared drive's own metadata changed
                file = change.get("file") or {}
                if change.get("removed") or file.get("trashed"):
                    yield Deleted(str(change["fileId"]))
                elif self._selected(file):
                    yield self._document(file)
            if body.get("newStartPageToken"):
                return str(body["newStartPageToken"])
            page = str(body["nextPageToken"])
            yield self._mark(tokens, done, scope=scope, mode="changes", page=page)

    def _start_token(self, scope: str) -> str:
        params = {"supportsAllDrives": "true", **({"driveId": scope} if scope else {})}
        return str(self._client.json("/drive/v3/changes/startPageToken", params)["startPageToken"])

    def _files_page(self, scope: str, page: str | None, fields: str) -> dict[str, Any]:
        params = {
            **COMMON,
            "q": "trashed = false",
            "orderBy": "createdTime,name",
            "pageSize": str(self.options.page_size),
            "fields": f"nextPageToken,incompleteSearch,files({fields})",
            "corpora": "drive" if scope else "allDrives",
        }
        if scope:
            params["driveId"] = scope
        if page:
            params["pageToken"] = page
        body = self._client.json("/drive/v3/files", params)
        if body.get("incompleteSearch"):
            raise TransientError(
                "Drive reported incompleteSearch for corpora=allDrives: the listing would "
                "miss files; list the shared drives to read in `shared_drives`"
            )
        return body

    def _selected(self, file: dict[str, Any]) -> bool:
        """Exported Google types and files a parser reads; folders and the rest are skipped."""
        mime = str(file.get("mimeType", ""))
        if file.get("trashed") or mime == FOLDER:
            return False
        return mime in EXPORTS or parser_for(str(file.get("name", "")), mime) is not None

    def _document(self, file: dict[str, Any]) -> SourceItem:
        file_id, mime, name = str(file["id"]), str(file["mimeType"]), str(file.get("name", ""))
        locator = str(file.get("webViewLink") or f"https://drive.google.com/file/d/{file_id}")
        size = int(file.get("size") or 0)
        if size > self.options.max_object_bytes:
            return Failure(
                file_id, locator, Stage.FETCH.value, "too_large",
                f"{name!r} is {size} bytes, over max_object_bytes="
                f"{self.options.max_object_bytes}; raise `max_object_bytes`", permanent=True,
            )  # fmt: skip
        modified = str(file.get("modifiedTime", ""))
        export = EXPORTS.get(mime)
        return SourceDocument(
            object_id=file_id,
            locator=locator,
            title=name,
            version=str(file.get("md5Checksum") or modified),
            fetch_ref=json.dumps([file_id, export or ""]),
            media_type="text/plain" if export else mime,
            updated_at=datetime.fromisoformat(modified) if modified else None,
            metadata={
                "mime_type": mime,
                "drive_id": str(file.get("driveId") or ""),
                HIERARCHY_KEY: self._path(file),
            },
            access=self._access(file),
        )

    def _path(self, file: dict[str, Any]) -> str:
        """The folders' names from the top of the file's drive down, then its own name."""
        names = [str(file.get("name", ""))]
        tops = {str(file.get("driveId") or ""), self._root_id()}
        parents = file.get("parents") or []
        parent = str(parents[0]) if parents else None
        while parent and parent not in tops and len(names) < MAX_DEPTH:
            folder = self._folder(parent)
            if folder is None:
                break  # the token cannot see it: the path starts below
            names.append(folder[0])
            parent = folder[1]
        return "/".join(reversed(names))

    def _root_id(self) -> str:
        if self._root is None:
            path = "/drive/v3/files/root"
            self._root = str(self._client.json(path, {"fields": "id"})["id"])
        return self._root

    def _folder(self, folder_id: str) -> tuple[str, str | None] | None:
        """(name, parent id) of a folder; None when the token cannot see it."""
        if folder_id not in self._folders:
            path = f"/drive/v3/files/{folder_id}"
            params = {"supportsAllDrives": "true", "fields": "id,name,parents"}
            response = self._client.get(path, params)
            if response.status_code in (403, 404):
                return None
            raise_for_status(response, path)
            body = response.json()
            parents = body.get("parents") or []
            self._folders[folder_id] = (
                str(body.get("name", "")),
                str(parents[0]) if parents else None,
            )
        return self._folders[folder_id]

    def _access(self, file: dict[str, Any]) -> Access | None:
        """The file's readers (see ``_acl.file_access``)."""
        return file_access(self._client, self.source_id, file)

    def refetch(self, object_ids: Sequence[str]) -> Iterator[SourceItem]:
        """Each file of ``object_ids`` as it is now, by ``files.get`` (see ``_refetch``)."""
        self._folders.clear()  # a folder renamed since is read again, as by a run
        return refetch(self, object_ids)

    # -- push notification channels (the scheduler keeps them alive) -------------------

    def subscription_scopes(self) -> list[str]:
        """One channel per scope: ``""`` (all the token sees) or each shared drive."""
        return list(self._scopes)

    def subscribe(self, scope: str, address: str, secret: str, now: datetime) -> Subscription:
        """A new channel on the changes of ``scope`` (see ``_channels``)."""
        return channels.watch(self._client, scope, address, secret, now + self._lifetime)

    def renew(
        self, current: Subscription, address: str, secret: str, now: datetime
    ) -> Subscription:
        """A new channel in place of ``current``, which is then stopped."""
        return channels.renew(self._client, current, address, secret, now + self._lifetime)

    # -- enumerate, permissions and fetch --------------------------------------------------

    def enumerate(self) -> Iterator[str]:
        """Every current file id; raises if any page cannot be read."""
        for scope in self._scopes:
            page: str | None = None
            while True:
                body = self._files_page(scope, page, "id,name,mimeType,trashed")
                for file in body.get("files", []):
                    if self._selected(file):
                        yield str(file["id"])
                page = body.get("nextPageToken")
                if not page:
                    break

    def groups(self) -> Iterator[ListedGroup]:
        """The groups of ``groups_domain`` with members and nested groups (Directory API);
        none without it (Drive itself lists no groups)."""
        if self._directory is not None:
            yield from self._directory.groups()

    def permissions(self) -> Iterator[tuple[str, Access]]:
        """Every listed file's current ACL, from the file listing; no content is read.

        A file whose permissions the token cannot see (``None``) is not named: the
        source's ``access`` applies to it and a permission sync leaves it as it is.
        """
        for scope in self._scopes:
            page: str | None = None
            while True:
                body = self._files_page(scope, page, FILE_FIELDS)
                for file in body.get("files", []):
                    if self._selected(file):
                        access = self._access(file)
                        if access is not None:
                            yield str(file["id"]), access
                page = body.get("nextPageToken")
                if not page:
                    break

    def fetch(self, ref: str) -> bytes:
        """A file's bytes (``alt=media``) or its export (``files.export``)."""
        file_id, export = json.loads(ref)
        if export:
            path, params = f"/drive/v3/files/{file_id}/export", {"mimeType": export}
        else:
            path, params = (
                f"/drive/v3/files/{file_id}",
                {"alt": "media", "supportsAllDrives": "true"},
            )
        response = self._client.get(path, params)
        raise_for_status(response, path)
        if len(response.content) > self.options.max_object_bytes:
            raise ItemError("too_large", f"{path} is over max_object_bytes")
        return response.content
