"""What the object-store connectors read over HTTP (``azure_blob``, ``gcs``) share.

A store is a flat, ordered listing of keys in one container or bucket, page by page,
each entry carrying a version hint (an ETag, a generation) and its size, so a read is
one listing request per page and nothing else: ``BucketConnector`` turns those pages
into lazily fetched documents, checkpoints after every page (the store's own page
token, so a killed run resumes where it stopped, and a refused token relists from the
start), selects keys with a prefix and include/exclude globs relative to it, and
enumerates the same listing for deletes. Each store supplies ``_page`` and
``_download``; ``send`` makes their HTTP requests with the shared retry policy.
"""

from __future__ import annotations

import json
import logging
import mimetypes
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import ClassVar

import httpx
from pydantic import Field

from headwater.connectors.base import ConnectorCapabilities, ConnectorOptions, ReadStream
from headwater.connectors.globs import KeyFilter
from headwater.connectors.http import describe_network_error, parse_retry_after
from headwater.errors import ItemError, TransientError
from headwater.retry import RetryPolicy, call_with_retry
from headwater.scopes import HIERARCHY_KEY
from headwater.types import (
    Checkpoint,
    Failure,
    KnownVersions,
    MetadataValue,
    SourceDocument,
    Stage,
    Window,
)

log = logging.getLogger(__name__)

GENERIC_TYPES = frozenset({"binary/octet-stream", "application/octet-stream", ""})


class BucketOptions(ConnectorOptions):
    """The keys every object-store source has: scope, limits, timeouts and retries."""

    prefix: str = ""
    include: list[str] = Field(default_factory=list)
    exclude: list[str] = Field(default_factory=list)
    max_object_bytes: int = Field(default=50 * 1024 * 1024, gt=0)
    page_size: int = Field(default=1000, ge=1, le=1000)
    timeout: float = Field(default=30.0, gt=0)
    retry_attempts: int = Field(default=6, ge=1)
    retry_initial_wait: float = Field(default=1.0, ge=0)
    retry_max_wait: float = Field(default=60.0, ge=0)

    def retry_policy(self) -> RetryPolicy:
        """The shared retry policy these keys describe."""
        return RetryPolicy(
            attempts=self.retry_attempts,
            initial_wait=self.retry_initial_wait,
            max_wait=self.retry_max_wait,
        )


@dataclass(frozen=True)
class Listed:
    """One object as its listing shows it."""

    key: str
    size: int
    version: str
    modified: datetime | None
    content_type: str = ""
    sequence: int | None = None
    metadata: dict[str, MetadataValue] = field(default_factory=dict)


class CursorRefused(Exception):
    """The store no longer accepts a saved page token: list again from the start."""


def send(
    what: str,
    request: Callable[[], httpx.Response],
    url: str,
    policy: RetryPolicy,
) -> httpx.Response:
    """The answer to ``request``; transport faults, 429 and 5xx are retried per ``policy``
    and raised as TransientError (naming ``what`` and the server's Retry-After) at the end."""

    def attempt() -> httpx.Response:
        try:
            response = request()
        except httpx.HTTPError as exc:
            raise TransientError(f"{what}: {describe_network_error(exc, url)}") from exc
        status = response.status_code
        if status == 429 or status >= 500:
            response.read()
            raise TransientError(
                f"{what} returned HTTP {status}; the service is throttling or failing, retry later",
                retry_after=parse_retry_after(response.headers.get("retry-after")),
            )
        return response

    return call_with_retry(attempt, policy)


class BucketConnector:
    """Lists one container or bucket and hands its objects out for lazy fetching."""

    capabilities: ClassVar[ConnectorCapabilities] = ConnectorCapabilities(
        windowed=False, full_listing=True
    )

    def __init__(self, options: BucketOptions) -> None:
        self._scope = options
        self._selected = KeyFilter(options.include, options.exclude)

    # What each store supplies.
    def _page(self, token: str | None) -> tuple[list[Listed], str | None]:
        """One listing page from ``token`` (None: the first) and the next page's token;
        raises CursorRefused when the store refuses a saved token."""
        raise NotImplementedError

    def _download(self, key: str, limit: int) -> bytes:
        """Up to ``limit + 1`` bytes of the object; ItemError when it is gone or denied."""
        raise NotImplementedError

    def _locator(self, key: str) -> str:
        """Where a person finds the object."""
        raise NotImplementedError

    def in_scope(self, object_id: str) -> bool:
        """Whether the config selects this key: under ``prefix``, not a folder marker, and
        matched by the include/exclude globs, which are relative to the prefix."""
        prefix = self._scope.prefix
        if not object_id.startswith(prefix) or object_id.endswith("/"):
            return False
        relative = object_id[len(prefix) :]
        if not prefix.endswith("/"):  # prefix "published" is "published/" for the globs
            relative = relative.removeprefix("/")
        return self._selected(relative)

    def _pages(self, token: str | None) -> Iterator[tuple[list[Listed], str | None]]:
        """Selected entries page by page, each with the token of the page after it."""
        try:
            entries, token = self._page(token)
        except CursorRefused:
            log.warning("%s: the saved page token was refused; listing from the start", self)
            entries, token = self._page(None)
        while True:
            yield [e for e in entries if self.in_scope(e.key)], token
            if token is None:
                return
            entries, token = self._page(token)

    def read(
        self, window: Window, checkpoint: Checkpoint | None, known: KnownVersions
    ) -> ReadStream:
        for entries, token in self._pages(_resume_token(checkpoint)):
            for entry in entries:
                yield self._item(entry)
            if token is not None:
                yield Checkpoint(json.dumps({"v": 1, "page": token}))
        return Checkpoint(json.dumps({"v": 1, "complete": True}))

    def _item(self, entry: Listed) -> SourceDocument | Failure:
        key, limit = entry.key, self._scope.max_object_bytes
        if entry.size > limit:
            return Failure(
                object_id=key,
                locator=self._locator(key),
                stage=Stage.FETCH.value,
                error_class="too_large",
                message=f"{entry.size} bytes is over max_object_bytes={limit}; "
                "raise `max_object_bytes` or exclude the key",
                permanent=True,
            )
        media_type = mimetypes.guess_type(key)[0]
        if media_type is None:
            served = entry.content_type.split(";")[0].strip().lower()
            media_type = None if served in GENERIC_TYPES else served
        return SourceDocument(
            object_id=key,
            locator=self._locator(key),
            title="",  # the parser finds the title; else the core uses the key
            version=entry.version,
            fetch_ref=key,
            media_type=media_type,
            updated_at=entry.modified,
            sequence=entry.sequence,
            metadata={**entry.metadata, HIERARCHY_KEY: key},
        )

    def fetch(self, ref: str) -> bytes:
        """The object's bytes; ItemError when it vanished, is denied or is over the limit."""
        limit = self._scope.max_object_bytes
        data = self._download(ref, limit)
        if len(data) > limit:
            raise ItemError("too_large", f"object {ref!r} is over max_object_bytes={limit}")
        return data

    def enumerate(self) -> Iterator[str]:
        """Every selected key; raises if the listing cannot finish."""
        for entries, _ in self._pages(None):
            for entry in entries:
                yield entry.key


def read_capped(response: httpx.Response, limit: int) -> bytes:
    """At most ``limit + 1`` bytes of a streamed body (enough to see it is too large)."""
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            break
    return b"".join(chunks)[: limit + 1]


def _resume_token(checkpoint: Checkpoint | None) -> str | None:
    """The page token to list from: set mid-run, None for a fresh run (a full listing)."""
    if checkpoint is None:
        return None
    try:
        cursor = json.loads(checkpoint.cursor)
    except ValueError:
        log.warning("ignoring an unreadable checkpoint; listing from the start")
        return None
    page = cursor.get("page") if isinstance(cursor, dict) else None
    return page if isinstance(page, str) else None
