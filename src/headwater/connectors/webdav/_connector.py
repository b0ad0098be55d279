"""The WebDAV connector: walk collections with ``PROPFIND Depth: 1``, fetch lazily.

``Depth: infinity`` is often disabled, so the tree is walked one collection at a time, in
path order. The listing carries each file's ETag (the version hint; ``lastmodified:size``
when a server sends none), so an unchanged tree costs one PROPFIND per collection and no
GET. A complete read lists every current file (``full_listing``): the runner deletes by
set difference. A collection whose PROPFIND fails becomes a prefix Failure (stage
``enumerate``) and the walk goes on: every known file below it counts as present, so an
incomplete listing never prunes what sits below the failed collection.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator
from typing import ClassVar
from urllib.parse import quote, unquote, urlsplit

from pydantic import Field, SecretStr

from headwater.clock import iso
from headwater.connectors.base import (
    ConnectorCapabilities,
    ConnectorOptions,
    ReadStream,
    SourceContext,
)
from headwater.connectors.globs import KeyFilter
from headwater.connectors.webdav._client import Entry, WebdavClient
from headwater.errors import ConfigError, ItemError, TransientError
from headwater.retry import RetryPolicy
from headwater.scopes import HIERARCHY_KEY
from headwater.types import (
    Checkpoint,
    Failure,
    KnownVersions,
    MetadataValue,
    SourceDocument,
    SourceItem,
    Stage,
    Window,
)


class WebdavOptions(ConnectorOptions):
    """The keys of a ``webdav`` source."""

    url: str = Field(min_length=1, pattern=r"^https?://")
    username: str | None = None
    password: SecretStr | None = None
    include: list[str] = Field(default_factory=list)
    exclude: list[str] = Field(default_factory=list)
    max_object_bytes: int = Field(default=50 * 1024 * 1024, gt=0)
    timeout: float = Field(default=30.0, gt=0)


class WebdavConnector:
    """Reads every file below one collection URL."""

    type_name: ClassVar[str] = "webdav"
    capabilities: ClassVar[ConnectorCapabilities] = ConnectorCapabilities(
        windowed=False, full_listing=True
    )
    Options: ClassVar[type[WebdavOptions]] = WebdavOptions

    def __init__(self, options: WebdavOptions, context: SourceContext) -> None:
        if (options.username is None) != (options.password is None):
            raise ConfigError(
                "webdav source: only one of `username`/`password` is set; expected both or "
                "neither; set the other one or remove both"
            )
        self.options = options
        self.root = options.url if options.url.endswith("/") else options.url + "/"
        # Entry paths come unquoted from the listing: compare them with the unquoted root
        # (a configured `.../Team%20Share/` lists `/Team Share/...`).
        self._root_path = unquote(urlsplit(self.root).path)
        auth = None
        if options.username is not None and options.password is not None:
            auth = (options.username, options.password.get_secret_value())
        self._client = WebdavClient(
            auth=auth, timeout=options.timeout, user_agent=context.user_agent
        )
        self._selected = KeyFilter(options.include, options.exclude)

    def validate(self) -> None:
        """List the root collection once, without retries."""
        try:
            self._client.propfind(self.root, policy=RetryPolicy(attempts=1))
        except TransientError as exc:
            raise TransientError(
                f"webdav `url` {self.root}: {exc}; expected a WebDAV server answering there; "
                "check the host, the port and that the server is running"
            ) from exc
        except ItemError as exc:
            raise ConfigError(
                f"webdav `url` {self.root}: {exc}; expected a WebDAV collection there; fix "
                "`url` (it must name a folder the server lists)"
            ) from exc

    def in_scope(self, object_id: str) -> bool:
        """Whether the include/exclude globs select ``object_id``."""
        return self._selected(object_id)

    def read(
        self, window: Window, checkpoint: Checkpoint | None, known: KnownVersions
    ) -> ReadStream:
        """Yield every selected file under the root (content fetched lazily)."""
        yield from self._walk(self.root)
        return None

    def _walk(self, url: str) -> Iterator[SourceItem]:
        try:
            entries = self._client.propfind(url)
        except (ItemError, TransientError) as exc:
            if url == self.root:
                raise
            relative = self._relative(urlsplit(url).path)
            message = (
                f"PROPFIND of collection {relative!r} failed ({exc}); nothing under it is "
                "deleted until it can be listed again: fix the server or its permissions"
            )
            yield Failure(
                relative, url, Stage.ENUMERATE.value, "listing_failed", message, prefix=True
            )
            return
        for entry in entries:
            relative = self._relative(entry.path)
            if entry.unreadable is not None:
                if entry.is_collection or self._selected(relative):
                    yield self._unreadable(relative, entry)
            elif entry.is_collection:
                yield from self._walk(self._url(relative) + "/")
            elif self._selected(relative):
                yield self._document(relative, entry)

    def _unreadable(self, relative: str, entry: Entry) -> Failure:
        """A member listed without its properties: a failure, so it counts as present
        (a collection with everything under it) and nothing is deleted for it."""
        kind = "collection" if entry.is_collection else "file"
        message = (
            f"PROPFIND listed {kind} {relative!r} without its properties ({entry.unreadable}); "
            "it is kept as it was until the server lists it again: fix its permissions"
        )
        return Failure(
            relative, self._url(relative), Stage.ENUMERATE.value, "unreadable_member", message,
            prefix=entry.is_collection,
        )  # fmt: skip

    def _document(self, relative: str, entry: Entry) -> SourceItem:
        url = self._url(relative)
        if entry.length > self.options.max_object_bytes:
            return Failure(
                relative, url, Stage.FETCH.value, "too_large",
                f"{entry.length} bytes is over max_object_bytes={self.options.max_object_bytes};"
                " raise `max_object_bytes` or exclude the path", permanent=True,
            )  # fmt: skip
        version = entry.etag or f"{iso(entry.modified) or ''}:{entry.length}"
        metadata: dict[str, MetadataValue] = {
            "etag": entry.etag,
            "size": str(entry.length),
            HIERARCHY_KEY: relative,
        }
        if entry.modified is not None:
            metadata["last_modified"] = iso(entry.modified) or ""
        return SourceDocument(
            object_id=relative,
            locator=url,
            title=posixpath.basename(relative),
            version=version,
            fetch_ref=relative,
            media_type=entry.media_type,
            updated_at=entry.modified,
            metadata=metadata,
        )

    def _relative(self, path: str) -> str:
        root = self._root_path
        return path[len(root) :].strip("/") if path.startswith(root) else path.strip("/")

    def _url(self, relative: str) -> str:
        return self.root + quote(relative)

    def fetch(self, ref: str) -> bytes:
        """The file's bytes; ItemError when it vanished or is over the limit."""
        url = self._url(ref)
        response = self._client.request("GET", url)
        if response.status_code == 404:
            raise ItemError("not_found", f"GET {url} returned 404; the file was removed")
        if response.status_code != 200:
            raise ItemError(f"http_{response.status_code}", f"GET {url} returned HTTP "
                            f"{response.status_code}; expected 200", permanent=False)  # fmt: skip
        if len(response.content) > self.options.max_object_bytes:
            raise ItemError("too_large", f"{url} is over max_object_bytes")
        return response.content
