"""The SharePoint connector: each document library's ``delta``, from its saved deltaLink.

The site (``site``: ``host:/sites/path`` or a site id) is resolved with ``GET /sites/``,
its document libraries with ``/sites/{id}/drives`` (all of them, or those named in
``libraries``). The first run reads ``/drives/{id}/root/delta`` from the start: every
item, page by page (``@odata.nextLink``), ending in an ``@odata.deltaLink`` that the next
run starts from, so it reads only what changed: items with a ``deleted`` facet become
``Deleted``, others their current state. The ``Prefer: deltashowsharingchanges`` header
makes delta report permission changes too (``@microsoft.graph.sharedChanged``), whose
ACL is re-read without a download. A deltaLink Graph answers with **410 Gone**
(``resyncRequired``) starts that library over from the beginning, never a silent gap,
and ``enumerate()`` (a fresh delta) lets the runner prune what the resync no longer
lists. The links live only in the checkpoint: ``{"links": {drive: deltaLink}}`` plus,
mid-run, the library and nextLink in progress.
https://learn.microsoft.com/en-us/graph/api/driveitem-delta
"""

from __future__ import annotations

import json
from collections.abc import Generator, Iterator, Sequence
from datetime import datetime, timedelta
from typing import Any, ClassVar
from urllib.parse import quote

from pydantic import Field, field_validator

from headwater.connectors._bearer import BearerApiOptions
from headwater.connectors._governed import governed_transport
from headwater.connectors.base import (
    ConnectorCapabilities,
    ReadStream,
    SourceContext,
    Subscription,
)
from headwater.connectors.sharepoint import _subscriptions as graph_subscriptions
from headwater.connectors.sharepoint._acl import (
    access_from_permissions,
    group_name,
    principal_for_group,
)
from headwater.connectors.sharepoint._client import GraphClient, raise_for_status
from headwater.errors import ConfigError, ItemError, TransientError
from headwater.pipeline.parse import parser_for
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
from headwater.units import parse_duration

MAX_LIFETIME = graph_subscriptions.MAX_LIFETIME
PREFER = {"Prefer": "deltashowsharingchanges, hierarchicalsharing"}


GRAPH_GROUP = "#microsoft.graph.group"  # a directory object that is a group


class SharepointOptions(BearerApiOptions):
    """The keys of a ``sharepoint`` source."""

    site: str = Field(min_length=1)
    libraries: list[str] = Field(default_factory=list)
    base_url: str = Field(default="https://graph.microsoft.com/v1.0", pattern=r"^https?://")
    page_size: int = Field(default=200, ge=1, le=1000)
    max_object_bytes: int = Field(default=50 * 1024 * 1024, gt=0)
    # the lifetime asked for each change-notification subscription (with the source's
    # `notification_url`); Graph allows at most 42,300 minutes for drive items
    subscription_lifetime: str = "29d"

    @field_validator("subscription_lifetime")
    @classmethod
    def _lifetime(cls, value: str) -> str:
        lifetime = parse_duration(value)
        if lifetime is None or not timedelta(minutes=1) <= lifetime <= MAX_LIFETIME:
            raise ValueError(
                f"subscription_lifetime {value!r} is outside what Graph grants; expected a "
                'duration from "1m" to "29d" (42,300 minutes); fix `subscription_lifetime`'
            )
        return value


class SharepointConnector:
    """Reads the files of one site's document libraries through Graph delta."""

    type_name: ClassVar[str] = "sharepoint"
    capabilities: ClassVar[ConnectorCapabilities] = ConnectorCapabilities(
        windowed=False, full_listing=False
    )
    Options: ClassVar[type[SharepointOptions]] = SharepointOptions

    def __init__(self, options: SharepointOptions, context: SourceContext) -> None:
        self.options = options
        self.source_id = context.source_id
        self._client = GraphClient(
            options.base_url,
            options.token.get_secret_value(),
            timeout=options.timeout,
            user_agent=context.user_agent,
            transport=governed_transport(context, "sharepoint", options.token.get_secret_value()),
            policy=options.retry_policy(),
        )
        self._drives: list[tuple[str, str]] | None = None

    # -- validate -------------------------------------------------------------------------

    def validate(self) -> None:
        """List the site's document libraries once, without retries."""
        try:
            self._libraries(RetryPolicy(attempts=1))
        except TransientError as exc:
            raise TransientError(
                f"sharepoint `base_url` {self.options.base_url}: {exc}; check the address and "
                "try again later"
            ) from exc

    def _libraries(self, policy: RetryPolicy | None = None) -> list[tuple[str, str]]:
        """(drive id, name) of the libraries to read, in the site's order."""
        if self._drives is not None:
            return self._drives
        site = self.options.site
        response = self._client.get(f"/sites/{quote(site, safe=':/,.')}", policy=policy)
        if response.status_code in (400, 404):
            raise ConfigError(
                f"sharepoint `site` {site!r} was not found (HTTP {response.status_code}); "
                "expected `host:/sites/name` or a site id; fix `site`"
            )
        raise_for_status(response, f"/sites/{site}")
        site_id = str(response.json()["id"])
        drives: list[tuple[str, str]] = []
        url: str | None = f"/sites/{site_id}/drives"
        while url:
            page = self._client.get(url, policy=policy)
            raise_for_status(page, url)
            body = page.json()
            drives += [(str(d["id"]), str(d.get("name", ""))) for d in body.get("value", [])]
            url = body.get("@odata.nextLink")
        if self.options.libraries:
            names = {name for _, name in drives}
            unknown = [n for n in self.options.libraries if n not in names]
            if unknown:
                raise ConfigError(
                    f"sharepoint `libraries` names {unknown[0]!r}, which site {site!r} does "
                    f"not have; expected one of {sorted(names)}; fix `libraries`"
                )
            drives = [d for d in drives if d[1] in self.options.libraries]
        self._drives = drives
        return drives

    # -- read -----------------------------------------------------------------------------

    def read(
        self, window: Window, checkpoint: Checkpoint | None, known: KnownVersions
    ) -> ReadStream:
        """Yield each library's changes since its saved deltaLink (all files on a first run)."""
        state = json.loads(checkpoint.cursor) if checkpoint else {}
        links: dict[str, str] = dict(state.get("links", {}))
        done: list[str] = list(state.get("done", []))
        pending: dict[str, str] = state.get("pending") or {}
        drives = [d for d, _ in self._libraries()]
        for index, drive in enumerate(drives):
            if drive in done:
                continue
            start = pending.get("next") if pending.get("drive") == drive else None
            links[drive] = yield from self._delta(drive, start or links.get(drive), links, done)
            done.append(drive)
            if index + 1 < len(drives):
                yield Checkpoint(json.dumps({"links": links, "done": done}))
        return Checkpoint(json.dumps({"links": {d: links[d] for d in drives}}))

    def _first(self, drive: str) -> str:
        return f"/drives/{drive}/root/delta?$top={self.options.page_size}"

    def _delta(
        self, drive: str, url: str | None, links: dict[str, str], done: list[str]
    ) -> Generator[SourceItem, None, str]:
        """Items from ``url`` (a deltaLink or nextLink) or from the start; returns the deltaLink."""
        url = url or self._first(drive)
        restarted = False
        while True:
            response = self._client.get(url, headers=PREFER)
            if response.status_code == 410 and not restarted:  # resyncRequired: start over
                url, restarted = self._first(drive), True
                continue
            raise_for_status(response, url)
            body = response.json()
            for item in body.get("value", []):
                if item.get("deleted") is not None:
                    yield Deleted(f"{drive}/{item['id']}")
                elif self._selected(item):
                    yield self._document(drive, item)
            if body.get("@odata.deltaLink"):
                return str(body["@odata.deltaLink"])
            url = str(body["@odata.nextLink"])
            pending = {"drive": drive, "next": url}
            yield Checkpoint(json.dumps({"links": links, "done": done, "pending": pending}))

    def _selected(self, item: dict[str, Any]) -> bool:
        """Files a parser reads; folders, the root and other types are skipped."""
        if "file" not in item or item.get("deleted") is not None:
            return False
        mime = str((item.get("file") or {}).get("mimeType", ""))
        return parser_for(str(item.get("name", "")), mime) is not None

    def _document(self, drive: str, item: dict[str, Any]) -> SourceItem:
        object_id = f"{drive}/{item['id']}"
        locator = str(item.get("webUrl") or object_id)
        size = int(item.get("size") or 0)
        if size > self.options.max_object_bytes:
            return Failure(
                object_id, locator, Stage.FETCH.value, "too_large",
                f"{item.get('name')!r} is {size} bytes, over max_object_bytes="
                f"{self.options.max_object_bytes}; raise `max_object_bytes`", permanent=True,
            )  # fmt: skip
        modified = str(item.get("lastModifiedDateTime") or "")
        permissions = self._list(f"/drives/{drive}/items/{item['id']}/permissions")
        return SourceDocument(
            object_id=object_id,
            locator=locator,
            title=str(item.get("name", "")),
            version=str(item.get("cTag") or item.get("eTag") or modified),
            fetch_ref=object_id,
            media_type=str((item.get("file") or {}).get("mimeType") or "") or None,
            updated_at=datetime.fromisoformat(modified) if modified else None,
            metadata={
                "drive_id": drive,
                "path": str((item.get("parentReference") or {}).get("path", "")),
                HIERARCHY_KEY: library_path(item),
            },
            access=access_from_permissions(self.source_id, permissions),
        )

    def _list(self, url: str | None) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        while url:
            body = self._client.json(url)
            found += body.get("value", [])
            url = body.get("@odata.nextLink")
        return found

    def refetch(self, object_ids: Sequence[str]) -> Iterator[SourceItem]:
        """Each file of ``object_ids`` (``drive/item``) as it is now, by ``GET
        /drives/{d}/items/{i}`` and its permissions: no delta, no download (the content
        is fetched lazily, as in a sync). ``Deleted`` when Graph answers 404 for the item of
        a library it still lists (or the item carries a ``deleted`` facet); an item of a
        library this source does not read, a folder or a type no parser reads yields nothing.
        https://learn.microsoft.com/en-us/graph/api/driveitem-get
        """
        drives = {d for d, _ in self._libraries()}
        for object_id in object_ids:
            drive, _, item_id = object_id.partition("/")
            if drive not in drives or not item_id or "/" in item_id:
                continue
            url = f"/drives/{drive}/items/{quote(item_id, safe='!')}"
            response = self._client.get(url)
            if response.status_code == 404:
                yield Deleted(object_id)
                continue
            raise_for_status(response, url)
            item = response.json()
            if item.get("deleted") is not None:
                yield Deleted(object_id)
            elif self._selected(item):
                yield self._document(drive, item)

    # -- change-notification subscriptions (the scheduler keeps them alive) -------------

    def subscription_scopes(self) -> list[str]:
        """One subscription per library: its drive id."""
        return [drive for drive, _ in self._libraries()]

    def subscribe(self, scope: str, address: str, secret: str, now: datetime) -> Subscription:
        """A new Graph subscription to library ``scope`` (see ``_subscriptions``)."""
        expires = now + self._lifetime()
        return graph_subscriptions.subscribe(self._client, scope, address, secret, expires)

    def renew(
        self, current: Subscription, address: str, secret: str, now: datetime
    ) -> Subscription:
        """``current`` extended by ``subscription_lifetime`` from ``now``."""
        expires = now + self._lifetime()
        return graph_subscriptions.renew(self._client, current, address, secret, expires)

    def _lifetime(self) -> timedelta:
        return parse_duration(self.options.subscription_lifetime) or MAX_LIFETIME

    # -- enumerate, permissions, fetch, groups ---------------------------------------------

    def enumerate(self) -> Iterator[str]:
        """Every current file id, from a fresh delta of each library; raises on any error."""
        for drive, _ in self._libraries():
            url: str | None = self._first(drive)
            while url:
                body = self._client.json(url)
                for item in body.get("value", []):
                    if self._selected(item):
                        yield f"{drive}/{item['id']}"
                url = body.get("@odata.nextLink")

    def permissions(self) -> Iterator[tuple[str, Access]]:
        """Every current file's ACL, from a fresh delta and each item's permissions.

        No content is downloaded: a permission sync writes only the ACLs that changed.
        """
        for drive, _ in self._libraries():
            url: str | None = self._first(drive)
            while url:
                body = self._client.json(url)
                for item in body.get("value", []):
                    if self._selected(item):
                        found = self._list(f"/drives/{drive}/items/{item['id']}/permissions")
                        yield (
                            f"{drive}/{item['id']}",
                            access_from_permissions(self.source_id, found),
                        )
                url = body.get("@odata.nextLink")

    def fetch(self, ref: str) -> bytes:
        """The content of the drive item ``ref`` (``drive/item``)."""
        drive, item = ref.split("/", 1)
        url = f"/drives/{drive}/items/{item}/content"
        response = self._client.get(url)
        raise_for_status(response, url)
        if len(response.content) > self.options.max_object_bytes:
            raise ItemError("too_large", f"{url} is over max_object_bytes")
        return response.content

    def groups(self) -> Iterator[ListedGroup]:
        """Every Entra ID group (``GroupMember.Read.All``) with its member emails and the
        groups nested in it (members of ``@odata.type`` group, by object id), named by
        object id like the ACLs' groups; display name and mail are its labels. A nested
        group's mail is never taken for a user's."""
        for group in self._list("/groups?$select=id,mail,displayName"):
            members = self._list(f"/groups/{group['id']}/members?$select=id,mail,userPrincipalName")
            nested = [m for m in members if m.get("@odata.type") == GRAPH_GROUP]
            emails = sorted(
                str(m.get("mail") or m.get("userPrincipalName"))
                for m in members
                if m.get("@odata.type") != GRAPH_GROUP
                and (m.get("mail") or m.get("userPrincipalName"))
            )
            yield ListedGroup(
                principal_for_group(self.source_id, group_name(group)),
                emails,
                display_name=group.get("displayName") or None,
                mail=group.get("mail") or None,
                subgroups=sorted(
                    principal_for_group(self.source_id, name)
                    for m in nested
                    if (name := group_name(m))
                ),
            )


def library_path(item: dict[str, Any]) -> str:
    """The item's path inside its library: its folder after ``root:`` and its name
    (``parentReference.path`` is ``/drives/{id}/root:/Folder/Sub``)."""
    parent = str((item.get("parentReference") or {}).get("path", ""))
    folder = parent.partition("root:")[2]
    return f"{folder.strip('/')}/{item.get('name', '')}".strip("/")
