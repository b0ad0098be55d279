"""The ``web`` connector: a site through its sitemaps and/or a crawl from start URLs.

Object ids are canonical URLs. Each page's version hint is its ETag / Last-Modified (or a
body hash when it has neither), sent back as a conditional request, so an unchanged page
costs one 304 and no body. Sitemap-only sources list exactly their sitemaps' URLs;
sources with ``start_urls`` follow links too. Vanished pages (404/410) come out as
explicit deletes; ``enumerate()`` gives the complete listing for prunes or raises.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import ClassVar

from pydantic import Field, field_validator, model_validator

from headwater.connectors.base import (
    ConnectorCapabilities,
    ConnectorOptions,
    ReadStream,
    SourceContext,
)
from headwater.connectors.http import HttpClient, HttpSettings
from headwater.connectors.web import sitemaps
from headwater.connectors.web.crawl import (
    Crawler,
    CrawlSettings,
    Gone,
    KnownFor,
    Page,
    Problem,
    Progress,
)
from headwater.connectors.web.linkcache import LinkCache
from headwater.connectors.web.robots import RobotsRules
from headwater.connectors.web.urls import DEFAULT_DROP_QUERY_PARAMS, Scope, canonicalize
from headwater.errors import ConfigError, FatalError, ItemError, ListingCapped, TransientError
from headwater.types import (
    Checkpoint,
    Deleted,
    Failure,
    KnownVersions,
    SourceDocument,
    Stage,
    Window,
)


class WebOptions(ConnectorOptions):
    """The web connector's options: sitemaps, start URLs, scope and crawl limits."""

    sitemaps: tuple[str, ...] = ()
    start_urls: tuple[str, ...] = ()
    allow_prefixes: tuple[str, ...] = ()
    deny_patterns: tuple[str, ...] = ()
    max_depth: int = Field(5, ge=0)
    max_pages: int = Field(10_000, ge=1)
    user_agent: str | None = None
    respect_robots: bool = True
    requests_per_second: float = Field(2.0, gt=0)
    concurrency: int = Field(4, ge=1, le=64)
    max_page_bytes: int = Field(10 * 1024 * 1024, ge=1024)
    drop_query_params: tuple[str, ...] = DEFAULT_DROP_QUERY_PARAMS
    timeout: float = Field(30.0, gt=0)
    max_attempts: int = Field(4, ge=1)
    max_retry_wait: float = Field(60.0, ge=0)
    checkpoint_every: int = Field(100, ge=1)

    @field_validator("sitemaps", "start_urls", "allow_prefixes")
    @classmethod
    def _http_urls(cls, urls: tuple[str, ...]) -> tuple[str, ...]:
        for url in urls:
            if canonicalize(url) is None:
                raise ValueError(f"{url!r} is not an http(s) URL; write it as https://host/path")
        return urls

    @field_validator("deny_patterns")
    @classmethod
    def _regexes(cls, patterns: tuple[str, ...]) -> tuple[str, ...]:
        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"{pattern!r} is not a valid regular expression: {exc}") from exc
        return patterns

    @model_validator(mode="after")
    def _has_roots(self) -> WebOptions:
        if not self.sitemaps and not self.start_urls:
            raise ValueError("set `sitemaps` or `start_urls` (or both); neither was given")
        return self


def _cursor_done(checkpoint: Checkpoint | None) -> int:
    if checkpoint is None:
        return 0
    try:
        done = json.loads(checkpoint.cursor).get("done", 0)
    except (ValueError, AttributeError) as exc:
        raise FatalError(f"web checkpoint {checkpoint.cursor!r} is not this connector's") from exc
    return int(done)


class WebConnector:
    """Read a web site: sitemap URLs in URL order, or a breadth-first crawl."""

    type_name: ClassVar[str] = "web"
    # A read may stop at max_pages and cannot prove it saw every page: deletes come from
    # explicit 404/410s and from enumerate(), which raises when its walk was incomplete.
    capabilities: ClassVar[ConnectorCapabilities] = ConnectorCapabilities(
        windowed=False, full_listing=False
    )
    Options: ClassVar[type[WebOptions]] = WebOptions

    def __init__(self, options: WebOptions, context: SourceContext) -> None:
        self.options = options
        self.context = context
        self.user_agent = options.user_agent or context.user_agent
        self.scope = Scope.build(
            options.allow_prefixes,
            options.deny_patterns,
            [*options.start_urls, *options.sitemaps],
            options.drop_query_params,
        )
        self._client: HttpClient | None = None
        self._cache: LinkCache | None = None

    @property
    def client(self) -> HttpClient:
        """The HTTP client, made on first use."""
        if self._client is None:
            o = self.options
            settings = HttpSettings(
                user_agent=self.user_agent,
                timeout=o.timeout,
                requests_per_second=o.requests_per_second,
                max_attempts=o.max_attempts,
                initial_wait=min(0.5, o.max_retry_wait),
                max_retry_wait=o.max_retry_wait,
            )
            self._client = HttpClient(settings)
        return self._client

    @property
    def cache(self) -> LinkCache:
        """The source's link cache, opened on first use."""
        if self._cache is None:
            # state_dir is the workspace's; one file per source keeps sources apart
            source = re.sub(r"[^A-Za-z0-9._-]", "_", self.context.source_id)
            self._cache = LinkCache(self.context.state_dir / "web" / f"{source}.pages.sqlite")
        return self._cache

    def close(self) -> None:
        """Close the HTTP client and the link cache, if opened."""
        if self._client is not None:
            self._client.close()
        if self._cache is not None:
            self._cache.close()
        self._client = self._cache = None

    # -- the contract -------------------------------------------------------------------

    def validate(self) -> None:
        """Fetch each sitemap and start URL once; check they are usable and in scope."""
        robots = self._robots()
        for url in self.options.sitemaps:
            fetched = self.client.probe(url, option="sitemaps", what="sitemap")
            try:
                sitemaps.parse_sitemap(fetched.body, url)
            except ItemError as exc:
                raise ConfigError(
                    f"`sitemaps` {url} is not a usable sitemap ({exc}); expected a <urlset> or "
                    "<sitemapindex> XML file; fix the URL in `sitemaps`"
                ) from exc
        for url in self.options.start_urls:
            fetched = self.client.probe(url, option="start_urls", what="page")
            final = canonicalize(fetched.url, drop=self.options.drop_query_params)
            if final is None or not self.scope.allows(final):
                raise ConfigError(
                    f"`start_urls` {url} redirects to {fetched.url}, outside the crawl scope "
                    f"{list(self.scope.allow_prefixes)}; expected a page in scope; put the "
                    "final address in `start_urls` or add its prefix to `allow_prefixes`"
                )
        self._check_start_urls(robots)

    def _check_start_urls(self, robots: RobotsRules) -> None:
        """ConfigError when robots.txt forbids a start URL (the crawl could read nothing)."""
        for url in self.options.start_urls:
            canonical = canonicalize(url, drop=self.options.drop_query_params) or url
            if not robots.allowed(canonical):
                raise ConfigError(
                    f"`start_urls` {url} is disallowed by robots.txt for user agent "
                    f"{self.user_agent!r}; expected a page the site lets crawlers read; pick "
                    "another start URL, or set respect_robots = false only for your own site"
                )

    def read(
        self, window: Window, checkpoint: Checkpoint | None, known: KnownVersions
    ) -> ReadStream:
        """Yield the pages of the sitemaps and the crawl, resuming after the checkpoint."""
        done = _cursor_done(checkpoint)
        robots = self._robots()
        self._check_start_urls(robots)
        seeds, failures = self._seeds(robots)
        for failure in failures:
            if failure.sitemap in self.options.sitemaps:
                # A configured sitemap that is missing is the config's fault: fail the run
                # as validate() would, rather than succeed with nothing read.
                error = ConfigError if failure.permanent else TransientError
                raise error(
                    f"`sitemaps` {failure.sitemap} could not be read ({failure.message}); "
                    "expected a reachable <urlset> or <sitemapindex>; fix the URL in "
                    "`sitemaps` (no page was read or deleted)"
                )
        if done == 0:  # a nested sitemap of an index: a failure record, the rest is read
            for failure in failures:
                yield Failure(
                    failure.sitemap,
                    failure.sitemap,
                    Stage.ENUMERATE.value,
                    failure.error_class,
                    failure.message,
                    failure.permanent,
                )
        last = done
        crawler = self._crawler(robots)
        known_for: KnownFor = lambda guess, _cached: known(guess)  # noqa: E731
        for outcome in crawler.run(seeds, known_for, skip=done):
            if isinstance(outcome, Progress):
                if outcome.done - last >= self.options.checkpoint_every:
                    last = outcome.done
                    yield Checkpoint(json.dumps({"done": last}))
            elif isinstance(outcome, Page):
                yield SourceDocument(
                    object_id=outcome.object_id,
                    locator=outcome.object_id,
                    title=outcome.title,
                    version=outcome.version,
                    content=outcome.content,
                    media_type=outcome.media_type,
                )
            elif isinstance(outcome, Gone):
                # concluded from a 404/410 or a noindex, not reported: counted as inferred
                if outcome.known is not None or known(outcome.object_id) is not None:
                    yield Deleted(outcome.object_id, inferred=True)
            elif isinstance(outcome, Problem):
                yield Failure(
                    outcome.object_id,
                    outcome.url,
                    Stage.FETCH.value,
                    outcome.error_class,
                    outcome.message,
                    outcome.permanent,
                )
        return None

    def in_scope(self, object_id: str) -> bool:
        """Whether ``allow_prefixes`` and ``deny_patterns`` still cover this canonical URL."""
        return self.scope.allows(object_id)

    def enumerate(self) -> Iterator[str]:
        """Every current object id, or an exception: never a partial listing."""
        robots = self._robots()
        seeds, failures = self._seeds(robots)
        for failure in failures:
            error = TransientError if not failure.permanent else FatalError
            raise error(
                f"sitemap {failure.sitemap} could not be read ({failure.message}); the listing "
                "is incomplete, so no page is deleted; fix the sitemap or retry later"
            )
        if not self.options.start_urls:
            for url in seeds:  # the id a read reports: the URL, or where it last led
                if robots.allowed(url):
                    cached = self.cache.get(url)
                    yield cached.object_id if cached is not None else url
            return
        crawler = self._crawler(robots)
        by_cache: KnownFor = lambda _guess, cached: cached.version if cached else None  # noqa: E731
        for outcome in crawler.run(seeds, by_cache):
            if isinstance(outcome, Page | Problem):
                yield outcome.object_id
        if crawler.truncated:
            raise ListingCapped(
                f"the crawl stopped at max_pages = {self.options.max_pages} before it saw every "
                "page; the listing is incomplete, so no page is deleted; raise `max_pages`"
            )
        if crawler.incomplete:
            raise TransientError(
                f"{len(crawler.incomplete)} page(s) could not be fetched (first: "
                f"{crawler.incomplete[0]}); the listing is incomplete, so no page is deleted"
            )

    # -- helpers ------------------------------------------------------------------------

    def _robots(self) -> RobotsRules:
        return RobotsRules(self.client, self.user_agent, self.options.respect_robots)

    def _crawler(self, robots: RobotsRules) -> Crawler:
        o = self.options
        settings = CrawlSettings(
            follow_links=bool(o.start_urls),
            max_depth=o.max_depth,
            max_pages=o.max_pages,
            max_page_bytes=o.max_page_bytes,
            concurrency=o.concurrency,
            batch_size=max(1, min(o.concurrency * 4, o.checkpoint_every)),
            drop_query_params=o.drop_query_params,
        )
        return Crawler(self.client, robots, self.cache, self.scope, settings)

    def _seeds(self, robots: RobotsRules) -> tuple[list[str], list[sitemaps.SitemapFailure]]:
        """Start URLs in their order, then the sitemaps' in-scope URLs sorted."""
        drop = self.options.drop_query_params
        starts = [c for c in (canonicalize(u, drop=drop) for u in self.options.start_urls) if c]
        listed: set[str] = set()
        failures: list[sitemaps.SitemapFailure] = []
        for entry in sitemaps.walk(self.options.sitemaps, self._fetch_sitemap):
            if isinstance(entry, sitemaps.SitemapFailure):
                failures.append(entry)
                continue
            canonical = canonicalize(entry.loc, entry.sitemap, drop)
            if canonical and self.scope.allows(canonical):
                listed.add(canonical)
        return list(dict.fromkeys([*starts, *sorted(listed)])), failures

    def _fetch_sitemap(self, url: str) -> bytes:
        fetched = self.client.get(url, max_bytes=sitemaps.MAX_SITEMAP_BYTES, follow=lambda _: True)
        if fetched.status != 200:
            raise ItemError(
                f"http_{fetched.status}",
                f"sitemap {url} returned HTTP {fetched.status}",
                permanent=fetched.status in (404, 410),
            )
        return fetched.body


__all__ = ["WebConnector", "WebOptions"]
