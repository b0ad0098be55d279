"""The Confluence Cloud connector: pages and blog posts of chosen spaces, found with CQL.

Each space is listed with the v1 content search (CQL, cursor paged, bodies left out), so
the listing costs a request per page of results and no content: a body is fetched lazily
(``fetch``) only when the version number differs from the manifest's. A windowed run asks
CQL for ``lastmodified`` since the window start, widened by ``window_overlap`` and by a
day more in the query itself (CQL compares minutes in the API user's time zone), then
filters exactly. A space is read in full on the first run, when its permissions changed
(their fingerprint is kept in the checkpoint), and every ``acl_refresh_every``, so page
restriction changes, which do not touch ``lastmodified``, still arrive. Deletes are found
by ``enumerate()`` (every content id of every space). See docs/connectors/confluence.md.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta
from typing import Any, ClassVar, Literal

from pydantic import Field, SecretStr, field_validator

from headwater.clock import as_utc
from headwater.connectors._atlassian import AtlassianClient
from headwater.connectors._containers import container_state, needs_full_listing
from headwater.connectors._governed import governed_transport
from headwater.connectors.base import (
    ConnectorCapabilities,
    ConnectorOptions,
    ReadStream,
    SourceContext,
)
from headwater.connectors.confluence._acl import (
    SCOPE_PERMISSIONS,
    ConfluenceAcl,
    fingerprint,
    narrowed,
    next_link,
)
from headwater.connectors.http import MissingAtServer
from headwater.errors import ConfigError, ItemError, TransientError
from headwater.retry import RetryPolicy
from headwater.scopes import HIERARCHY_KEY
from headwater.types import (
    Access,
    Checkpoint,
    Deleted,
    KnownVersions,
    ListedGroup,
    SourceDocument,
    Window,
)
from headwater.units import parse_duration

SCOPE_SPACES = "read:space:confluence"
SCOPE_SEARCH = "search:confluence"
SCOPE_CONTENT = "read:confluence-content.all"
SEARCH = "/wiki/rest/api/content/search"
EXPAND = (
    "version,space,ancestors,"
    "restrictions.read.restrictions.user,restrictions.read.restrictions.group"
)
ContentType = Literal["page", "blogpost"]
CQL_ZONE_SLACK = timedelta(hours=24)  # the API user's time zone is unknown to us


def _duration(value: str) -> str:
    try:
        parse_duration(value)
    except (ValueError, ConfigError) as exc:
        raise ValueError(f'{value!r} is not a duration; expected e.g. "10m", "24h"') from exc
    return value


class ConfluenceOptions(ConnectorOptions):
    """The keys of a ``confluence`` source."""

    base_url: str = Field(pattern=r"^https?://")
    email: str = Field(min_length=3)
    api_token: SecretStr
    spaces: list[str] = Field(min_length=1)
    content_types: list[ContentType] = Field(
        default_factory=lambda: list[ContentType](["page", "blogpost"]), min_length=1
    )
    window_overlap: str = "10m"
    acl_refresh_every: str = "24h"
    page_size: int = Field(default=100, ge=1, le=250)
    timeout: float = Field(default=30.0, gt=0)
    max_attempts: int = Field(default=5, ge=1)
    retry_initial_wait: float = Field(default=1.0, ge=0)

    _check_overlap = field_validator("window_overlap", "acl_refresh_every")(_duration)


class ConfluenceConnector:
    """Reads pages and blog posts of the configured spaces."""

    type_name: ClassVar[str] = "confluence"
    capabilities: ClassVar[ConnectorCapabilities] = ConnectorCapabilities(windowed=True)
    Options: ClassVar[type[ConfluenceOptions]] = ConfluenceOptions

    def __init__(self, options: ConfluenceOptions, context: SourceContext) -> None:
        self.options = options
        self.source_id = context.source_id
        self._overlap = parse_duration(options.window_overlap) or timedelta(0)
        self._refresh = parse_duration(options.acl_refresh_every) or timedelta(0)
        self._client = AtlassianClient(
            options.base_url,
            email=options.email,
            token=options.api_token.get_secret_value(),
            product="Confluence",
            timeout=options.timeout,
            user_agent=context.user_agent,
            transport=governed_transport(
                context, "atlassian", options.api_token.get_secret_value()
            ),
            policy=RetryPolicy(
                attempts=options.max_attempts, initial_wait=options.retry_initial_wait
            ),
        )
        self._acl = ConfluenceAcl(self._client, context.source_id)
        self._space_ids: dict[str, str] = {}

    # -- validate --------------------------------------------------------------------

    def validate(self) -> None:
        """Look up the configured spaces once, without retries."""
        once = RetryPolicy(attempts=1)
        try:
            ids = self._lookup_spaces(once)
            first = ids[self.options.spaces[0]]
            self._client.get(
                SEARCH,
                {"cql": self._cql(self.options.spaces[0], None), "limit": 1},
                scope=SCOPE_SEARCH,
                policy=once,
            )
            self._client.get(
                f"/wiki/api/v2/spaces/{first}/permissions",
                {"limit": 1},
                scope=SCOPE_PERMISSIONS,
                policy=once,
            )
        except TransientError as exc:
            raise TransientError(
                f"confluence `base_url` {self.options.base_url}: {exc}; expected a Confluence "
                "Cloud site answering there; check `base_url` and try again later"
            ) from exc

    def _lookup_spaces(self, policy: RetryPolicy | None = None) -> dict[str, str]:
        if not self._space_ids:
            data = self._client.get(
                "/wiki/api/v2/spaces",
                {"keys": ",".join(self.options.spaces), "limit": 250},
                scope=SCOPE_SPACES,
                policy=policy,
            )
            found = {row["key"]: str(row["id"]) for row in data.get("results", [])}
            missing = [key for key in self.options.spaces if key not in found]
            if missing:
                raise ConfigError(
                    f"confluence `spaces`: no space with key {', '.join(map(repr, missing))} "
                    f"at {self.options.base_url} (or the account cannot see it); expected "
                    "existing space keys; fix `spaces` or grant the account access"
                )
            self._space_ids = found
        return self._space_ids

    # -- read ------------------------------------------------------------------------

    def read(
        self, window: Window, checkpoint: Checkpoint | None, known: KnownVersions
    ) -> ReadStream:
        """Yield the spaces' pages and blog posts changed since the checkpoint; return the next."""
        state = json.loads(checkpoint.cursor) if checkpoint else {}
        prev: dict[str, dict[str, str]] = state.get("prev", state.get("spaces", {}))
        done: dict[str, dict[str, str]] = dict(state.get("done", {}))
        resume = state.get("at")
        ids = self._lookup_spaces()
        for index, key in enumerate(self.options.spaces):
            if resume is not None and index < resume["space"]:
                continue
            access = self._acl.space_access(ids[key])
            mark = fingerprint(access)
            before = prev.get(key)
            if resume is not None and index == resume["space"] and resume.get("next"):
                full, path = bool(resume["full"]), resume.get("next")
            else:
                full = needs_full_listing(window, checkpoint, before, mark, self._refresh)
                path = None
            done[key] = container_state(mark, full, window, before)
            low = None if full or window.start is None else window.start - self._overlap
            params: dict[str, str | int] = {
                "cql": self._cql(key, low),
                "limit": self.options.page_size,
                "expand": EXPAND,
            }
            while True:
                data = self._client.get(
                    path or SEARCH, None if path else params, scope=SCOPE_SEARCH
                )
                for row in data.get("results", []):
                    doc = self._document(row, access)
                    if full or low is None or _inside(doc.updated_at, low, window.end):
                        yield doc
                path = next_link(data, self.options.base_url)
                at = {"space": index if path else index + 1, "full": full, "next": path}
                yield Checkpoint(json.dumps({"prev": prev, "done": done, "at": at}))
                if not path:
                    break
        return Checkpoint(json.dumps({"spaces": done}, sort_keys=True))

    def _cql(self, key: str, low: datetime | None) -> str:
        kinds = ",".join(self.options.content_types)
        cql = f'space = "{key}" and type in ({kinds})'
        if low is not None:
            since = as_utc(low) - CQL_ZONE_SLACK
            cql += f' and lastmodified >= "{since:%Y-%m-%d %H:%M}"'
        return cql + " order by id"

    def _document(self, row: dict[str, Any], space: Access) -> SourceDocument:
        version = row.get("version", {})
        when = version.get("when")
        updated = as_utc(datetime.fromisoformat(when.replace("Z", "+00:00"))) if when else None
        webui = row.get("_links", {}).get("webui", "")
        site = self.options.base_url.rstrip("/")
        return SourceDocument(
            object_id=str(row["id"]),
            locator=f"{site}/wiki{webui}" if webui else f"{site}/wiki/pages/{row['id']}",
            title=str(row.get("title", "")),
            version=str(version.get("number", "")),
            fetch_ref=str(row["id"]),
            media_type="text/html",
            updated_at=updated,
            sequence=int(version["number"]) if "number" in version else None,
            metadata={
                "space": str(row.get("space", {}).get("key", "")),
                "content_type": str(row.get("type", "")),
                # the space, the page's ancestors (root first) and the page, by id
                HIERARCHY_KEY: "/".join(
                    [
                        str(row.get("space", {}).get("key", "")),
                        *(str(a["id"]) for a in row.get("ancestors", []) if "id" in a),
                        str(row["id"]),
                    ]
                ),
            },
            access=narrowed(space, self._acl.levels(row)),
        )

    # -- abilities -------------------------------------------------------------------

    def fetch(self, ref: str) -> bytes:
        """The storage-format body as an HTML document; ItemError when it is gone."""
        try:
            data = self._client.get(
                f"/wiki/rest/api/content/{ref}", {"expand": "body.storage"}, scope=SCOPE_CONTENT
            )
        except MissingAtServer as exc:
            raise ItemError("not_found", f"confluence content {ref} is gone: {exc}") from exc
        body = data.get("body", {}).get("storage", {}).get("value", "")
        title = html.escape(str(data.get("title", "")))
        return f"<html><head><title>{title}</title></head><body>{body}</body></html>".encode()

    def refetch(self, object_ids: Sequence[str]) -> Iterator[SourceDocument | Deleted]:
        """Each page or blog post of ``object_ids`` as it is now, by ``GET
        /wiki/rest/api/content/{id}`` with the listing's ``expand`` (version, space,
        ancestors, read restrictions) and its space's permissions; the body is fetched
        lazily, as in a sync.

        ``Deleted`` when Confluence answers 404 (deleted, trashed: only ``current`` content
        is answered, or no longer visible to the account). Content of a space or a type
        this source does not read yields nothing.
        https://developer.atlassian.com/cloud/confluence/rest/v1/api-group-content/#api-wiki-rest-api-content-id-get
        """
        spaces: dict[str, Access] = {}
        for object_id in object_ids:
            if not object_id.isdigit():
                continue
            try:
                row = self._client.get(
                    f"/wiki/rest/api/content/{object_id}", {"expand": EXPAND}, scope=SCOPE_CONTENT
                )
            except MissingAtServer:
                yield Deleted(object_id=object_id)
                continue
            key = str((row.get("space") or {}).get("key", ""))
            if key not in self.options.spaces or row.get("type") not in self.options.content_types:
                continue
            if key not in spaces:
                spaces[key] = self._acl.space_access(self._lookup_spaces()[key])
            yield self._document(row, spaces[key])

    def enumerate(self) -> Iterator[str]:
        """Every content id of every configured space; raises if any page of it fails."""
        for key in self.options.spaces:
            params: dict[str, str | int] = {
                "cql": self._cql(key, None),
                "limit": self.options.page_size,
            }
            path: str | None = None
            while True:
                data = self._client.get(
                    path or SEARCH, None if path else params, scope=SCOPE_SEARCH
                )
                for row in data.get("results", []):
                    yield str(row["id"])
                path = next_link(data, self.options.base_url)
                if not path:
                    break

    def groups(self) -> Iterator[ListedGroup]:
        """Every group of the site with its member emails and name (its label)."""
        return self._acl.groups()


def _inside(moment: datetime | None, low: datetime, high: datetime) -> bool:
    return moment is None or low < moment <= high
