"""The ``rss`` connector: entries of RSS and Atom feeds, newest window only.

Each feed is fetched with a conditional GET (its ETag / Last-Modified live in the
checkpoint), so an unchanged feed costs a 304 and yields nothing. Entries are windowed by
their updated (else published) time, except that an entry the manifest does not hold yet
is read whatever its date; object ids are entry ids as written (guid, else link). A feed
only shows its latest entries, so it cannot prove an entry gone: no ``enumerate()``, no
deletes. With ``fetch_linked_page`` the linked page is indexed instead of the summary,
fetched lazily only when the entry changed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, ClassVar

from pydantic import Field, field_validator, model_validator

from headwater.connectors.base import (
    ConnectorCapabilities,
    ConnectorOptions,
    ReadStream,
    SourceContext,
)
from headwater.connectors.http import (
    Fetched,
    HttpClient,
    HttpSettings,
    is_http_url,
    served_charset,
)
from headwater.connectors.rss.feeds import FeedEntry, parse_feed
from headwater.errors import ConfigError, CredentialError, FatalError, ItemError
from headwater.types import (
    Checkpoint,
    Failure,
    KnownVersions,
    SourceDocument,
    SourceItem,
    Stage,
    Window,
)


class RssOptions(ConnectorOptions):
    """The rss connector's options: the feeds and how entries are read."""

    url: str | None = None
    urls: tuple[str, ...] = ()
    fetch_linked_page: bool = False
    user_agent: str | None = None
    requests_per_second: float = Field(1.0, gt=0)
    max_feed_bytes: int = Field(20 * 1024 * 1024, ge=1024)
    max_page_bytes: int = Field(10 * 1024 * 1024, ge=1024)
    timeout: float = Field(30.0, gt=0)
    max_attempts: int = Field(4, ge=1)
    max_retry_wait: float = Field(60.0, ge=0)

    @field_validator("url")
    @classmethod
    def _one_url(cls, url: str | None) -> str | None:
        if url is not None and not is_http_url(url):
            raise ValueError(f"{url!r} is not an http(s) URL; write it as https://host/feed.xml")
        return url

    @field_validator("urls")
    @classmethod
    def _many_urls(cls, urls: tuple[str, ...]) -> tuple[str, ...]:
        for url in urls:
            cls._one_url(url)
        return urls

    @model_validator(mode="after")
    def _has_feed(self) -> RssOptions:
        if not self.feeds:
            raise ValueError("set `url` (one feed) or `urls` (several); neither was given")
        return self

    @property
    def feeds(self) -> list[str]:
        """The feed URLs, ``url`` first, without repeats."""
        return list(dict.fromkeys([*([self.url] if self.url else []), *self.urls]))


class _Cursor:
    """``{"feeds": {url: validators}, "done": [urls finished in this run]}``."""

    def __init__(self, checkpoint: Checkpoint | None) -> None:
        data: Any = {}
        if checkpoint is not None:
            try:
                data = json.loads(checkpoint.cursor)
            except ValueError as exc:
                raise FatalError(
                    f"rss checkpoint {checkpoint.cursor!r} is not this connector's"
                ) from exc
        self.feeds: dict[str, dict[str, str]] = dict(data.get("feeds", {}))
        self.done: list[str] = list(data.get("done", []))

    def checkpoint(self, *, final: bool = False) -> Checkpoint:
        state: dict[str, Any] = {"feeds": self.feeds}
        if not final:
            state["done"] = self.done
        return Checkpoint(json.dumps(state, sort_keys=True, separators=(",", ":")))


def _validators(fetched: Fetched) -> dict[str, str]:
    found = {
        "If-None-Match": fetched.headers.get("etag"),
        "If-Modified-Since": fetched.headers.get("last-modified"),
    }
    return {k: v for k, v in found.items() if v}


def _as_served(fetched: Fetched) -> bytes:
    """A linked page's bytes, re-encoded as UTF-8 with a byte order mark when its
    Content-Type names another charset. The document is declared ``text/html`` before
    the page is fetched, so the charset cannot travel with the media type, and the parser
    would fall back to guessing; a BOM outranks every other declaration."""
    charset = served_charset(fetched.headers, fetched.body)
    if charset is None or charset.lower().replace("_", "-") in ("utf-8", "utf8"):
        return fetched.body
    try:
        text = fetched.body.decode(charset)
    except (LookupError, UnicodeDecodeError):
        return fetched.body  # a wrong label: leave the bytes to the parser's detection
    return b"\xef\xbb\xbf" + text.encode("utf-8")


class RssConnector:
    """Read RSS 0.9x/1.0/2.0 and Atom feeds; one document per entry."""

    type_name: ClassVar[str] = "rss"
    capabilities: ClassVar[ConnectorCapabilities] = ConnectorCapabilities(
        windowed=True, full_listing=False
    )
    Options: ClassVar[type[RssOptions]] = RssOptions

    def __init__(self, options: RssOptions, context: SourceContext) -> None:
        self.options = options
        self.context = context
        self.user_agent = options.user_agent or context.user_agent
        self._client: HttpClient | None = None

    @property
    def client(self) -> HttpClient:
        """The HTTP client, made on first use."""
        if self._client is None:
            o = self.options
            self._client = HttpClient(
                HttpSettings(
                    user_agent=self.user_agent,
                    timeout=o.timeout,
                    requests_per_second=o.requests_per_second,
                    max_attempts=o.max_attempts,
                    initial_wait=min(0.5, o.max_retry_wait),
                    max_retry_wait=o.max_retry_wait,
                )
            )
        return self._client

    def close(self) -> None:
        """Close the HTTP client, if one was made."""
        if self._client is not None:
            self._client.close()
            self._client = None

    def validate(self) -> None:
        """Fetch each feed once and check that it is a feed."""
        for url in self.options.feeds:
            option = "url" if url == self.options.url else "urls"
            fetched = self.client.probe(url, option=option, what="feed")
            try:
                parse_feed(fetched.body, url, fetched.headers.get("content-type"))
            except ItemError as exc:
                raise ConfigError(
                    f"`{option}` {url} is not a usable feed ({exc}); expected RSS or Atom XML; "
                    f"fix the URL in `{option}`"
                ) from exc

    def read(
        self, window: Window, checkpoint: Checkpoint | None, known: KnownVersions
    ) -> ReadStream:
        """Yield the feeds' entries in the window; the checkpoint keeps each feed's validators."""
        cursor = _Cursor(checkpoint)
        seen: set[str] = set()
        for url in self.options.feeds:
            if url in cursor.done:
                continue
            yield from self._read_feed(url, window, cursor, seen, known)
            cursor.done.append(url)
            yield cursor.checkpoint()
        return cursor.checkpoint(final=True)

    def fetch(self, ref: str) -> bytes:
        """The linked page of an entry (``fetch_linked_page``)."""
        fetched = self.client.get(
            ref, max_bytes=self.options.max_page_bytes, follow=lambda _target: True
        )
        status = fetched.status
        if status == 200:
            return _as_served(fetched)
        raise ItemError(
            f"http_{status}",
            f"linked page {ref} returned HTTP {status}",
            permanent=status not in (401, 403),  # a refusal may pass; a 404 will not
        )

    def _read_feed(
        self, url: str, window: Window, cursor: _Cursor, seen: set[str], known: KnownVersions
    ) -> Iterator[SourceItem]:
        try:
            fetched = self.client.get(
                url,
                headers=cursor.feeds.get(url, {}),
                max_bytes=self.options.max_feed_bytes,
                follow=lambda _: True,
            )
        except ItemError as exc:  # too large, or a redirect loop
            raise FatalError(f"feed {url}: {exc}; fix the URL or raise `max_feed_bytes`") from exc
        if fetched.status == 304:
            return  # nothing new since the validators were stored
        if fetched.status != 200:
            error = CredentialError if fetched.status in (401, 403) else FatalError
            raise error(
                f"feed {url} returned HTTP {fetched.status}; expected the feed; the run stops so "
                "no entry of this window is lost; fix the URL or retry later"
            )
        try:
            entries = parse_feed(fetched.body, url, fetched.headers.get("content-type"))
        except ItemError as exc:
            raise FatalError(f"{exc}; the run stops so no entry of this window is lost") from exc
        found = [e for e in entries if isinstance(e, FeedEntry)]
        found.sort(key=lambda e: (e.sequence or 0, e.object_id))
        # One id twice in a feed (a re-posted or updated entry): its newest entry wins.
        newest = {e.object_id: e for e in found}  # oldest first: later entries overwrite
        found = [e for e in found if newest[e.object_id] is e]
        for number, bad in enumerate(e for e in entries if isinstance(e, ItemError)):
            yield Failure(
                f"{url}#entry-{number}", url, Stage.FETCH.value, bad.error_class, str(bad), True
            )
        ahead = False  # an entry dated after the window: fetch the whole feed next time
        for entry in found:
            ahead |= entry.updated_at is not None and entry.updated_at > window.end
            if entry.object_id in seen:
                continue
            late = entry.updated_at is not None and entry.updated_at > window.end
            if late or (not window.contains(entry.updated_at) and known(entry.object_id)):
                continue  # after the window: next run; before it: only if never held
            seen.add(entry.object_id)
            yield self._document(entry)
        if ahead:
            cursor.feeds.pop(url, None)
        else:
            cursor.feeds[url] = _validators(fetched)

    def _document(self, entry: FeedEntry) -> SourceDocument:
        linked = (
            self.options.fetch_linked_page and entry.link is not None and is_http_url(entry.link)
        )
        return SourceDocument(
            object_id=entry.object_id,
            locator=entry.link or str(entry.metadata["feed"]),
            title=entry.title,
            version=entry.version("linked" if linked else "entry"),
            content=None if linked else entry.page(),
            fetch_ref=entry.link if linked else None,
            media_type="text/html",
            updated_at=entry.updated_at,
            sequence=entry.sequence,
            metadata=entry.metadata,
        )
