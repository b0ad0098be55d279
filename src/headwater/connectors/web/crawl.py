"""The crawl engine behind both web modes: a breadth-first walk over canonical URLs.

Seeds (start URLs, sitemap URLs) go into a FIFO queue; each batch is fetched in a thread
pool (robots.txt, per-host rate limit and retries live in the client) and interpreted in
queue order on the calling thread, so the output order is the same on every run and a
checkpoint can be a plain count of dispatched URLs. Conditional requests use the version
the caller knows; a 304 reuses the links the ``LinkCache`` saw at that same version.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from urllib.parse import unquote, urlsplit

from headwater.connectors.http import Fetched, HttpClient
from headwater.connectors.web.linkcache import CachedPage, LinkCache
from headwater.connectors.web.page import (
    conditional_headers,
    declared_type,
    parse_page,
    version_of,
)
from headwater.connectors.web.robots import RobotsRules
from headwater.connectors.web.urls import Scope, canonicalize
from headwater.errors import ItemError, TransientError

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
ACCEPTED_TYPES = HTML_TYPES | {"text/plain", "text/markdown", "application/pdf"}
# Links to these are not pages: never requested (a seed or sitemap URL still is).
NOT_PAGES = re.compile(
    r"\.(?:png|jpe?g|gif|webp|svg|ico|bmp|tiff?|css|js|mjs|json|zip|gz|tgz|bz2|xz|7z|rar|tar"
    r"|exe|dmg|iso|apk|mp3|wav|ogg|flac|mp4|m4v|mov|avi|webm|mkv|woff2?|ttf|eot)$",
    re.IGNORECASE,
)
KnownFor = Callable[[str, "CachedPage | None"], "str | None"]


@dataclass(frozen=True)
class CrawlSettings:
    """How the crawl runs: link following, depth, page and size limits, concurrency."""

    follow_links: bool
    max_depth: int
    max_pages: int
    max_page_bytes: int
    concurrency: int
    batch_size: int
    drop_query_params: tuple[str, ...]


@dataclass(frozen=True)
class Task:
    """One page to fetch: its URL, depth and what is known of it."""

    ordinal: int
    url: str
    depth: int
    guess: str
    known: str | None
    cached: CachedPage | None


@dataclass(frozen=True)
class Page:
    """A page read (``content`` set) or confirmed unchanged by a 304 (``content`` None)."""

    url: str
    object_id: str
    version: str
    title: str
    content: bytes | None
    media_type: str | None


@dataclass(frozen=True)
class Gone:
    """404/410, a permanent redirect out of scope, or a page that now says ``noindex``;
    ``known`` is the stored version."""

    url: str
    object_id: str
    known: str | None


@dataclass(frozen=True)
class Problem:
    """A page that could not be read, as a failure to record."""

    url: str
    object_id: str
    error_class: str
    message: str
    permanent: bool


@dataclass(frozen=True)
class Progress:
    """Every URL up to ``done`` (a dispatch count) has been reported."""

    done: int


Outcome = Page | Gone | Problem | Progress


class Crawler:
    """One walk; ``truncated`` and ``incomplete`` say afterwards whether it saw everything."""

    def __init__(
        self,
        client: HttpClient,
        robots: RobotsRules,
        cache: LinkCache,
        scope: Scope,
        settings: CrawlSettings,
    ) -> None:
        self._client = client
        self._robots = robots
        self._cache = cache
        self._scope = scope
        self._s = settings
        self.truncated = False
        self.incomplete: list[str] = []

    def in_scope(self, url: str, base: str | None = None) -> str | None:
        """The canonical form of ``url`` when the scope allows it, else None."""
        canonical = canonicalize(url, base, self._s.drop_query_params)
        return canonical if canonical and self._scope.allows(canonical) else None

    def run(self, seeds: Sequence[str], known_for: KnownFor, skip: int = 0) -> Iterator[Outcome]:
        """Outcomes in dispatch order; the first ``skip`` dispatched URLs are not reported."""
        seeds = list(dict.fromkeys(seeds))
        queue: deque[tuple[str, int]] = deque((url, 0) for url in seeds)
        seen = set(seeds)
        reported: set[str] = set()
        dispatched = 0
        with ThreadPoolExecutor(max_workers=self._s.concurrency) as pool:
            while queue:
                batch: list[Task] = []
                while queue and len(batch) < self._s.batch_size:
                    if dispatched >= self._s.max_pages:
                        self.truncated = True
                        break
                    url, depth = queue.popleft()
                    if not self._robots.allowed(url):
                        continue
                    cached = self._cache.get(url)
                    guess = cached.object_id if cached else url
                    batch.append(
                        Task(dispatched, url, depth, guess, known_for(guess, cached), cached)
                    )
                    dispatched += 1
                if not batch:
                    break
                todo = [t for t in batch if t.ordinal >= skip or self._s.follow_links]
                results = dict(
                    zip((t.ordinal for t in todo), pool.map(self._fetch, todo), strict=True)
                )
                for task in batch:
                    result = results.get(task.ordinal)
                    if result is None:  # resumed past it without fetching
                        reported.add(task.guess)
                        continue
                    outcome, links = self._interpret(task, result)
                    if task.depth < self._s.max_depth and self._s.follow_links:
                        for link in links:
                            if link not in seen:
                                seen.add(link)
                                queue.append((link, task.depth + 1))
                    if outcome is None or outcome.object_id in reported:
                        continue  # one object id is reported once per walk
                    reported.add(outcome.object_id)
                    if task.ordinal >= skip:
                        yield outcome
                yield Progress(dispatched)

    def _fetch(self, task: Task) -> Fetched | TransientError | ItemError:
        try:
            return self._client.get(
                task.url,
                headers=conditional_headers(task.known),
                max_bytes=self._s.max_page_bytes,
                follow=self._may_follow,
                accept=ACCEPTED_TYPES,
            )
        except (TransientError, ItemError) as exc:
            return exc

    def _may_follow(self, target: str) -> bool:
        canonical = self.in_scope(target)
        return canonical is not None and self._robots.allowed(canonical)

    def _interpret(
        self, task: Task, result: Fetched | TransientError | ItemError
    ) -> tuple[Page | Gone | Problem | None, Sequence[str]]:
        cached_links = task.cached.links if task.cached else ()
        if isinstance(result, TransientError | ItemError):
            permanent = isinstance(result, ItemError) and result.permanent
            if not permanent and task.cached is None and self._s.follow_links:
                self.incomplete.append(task.url)
            error_class = result.error_class if isinstance(result, ItemError) else "transient"
            return Problem(task.url, task.guess, error_class, str(result), permanent), cached_links
        status = result.status
        if status == 304 and task.known is not None:
            cached = task.cached
            if self._s.follow_links and (cached is None or cached.version != task.known):
                return self._interpret(task, self._fetch(replace(task, known=None)))
            title = cached.title if cached and cached.object_id == task.guess else ""
            page = Page(task.url, task.guess, task.known, title, None, None)
            return page, cached_links
        if status == 200:
            return self._read_page(task, result)
        if status in (301, 308) and task.depth == 0 and task.known is None:
            # A start or sitemap URL that moved out of scope (http:// to https://, the
            # apex to www.): without this record the run reads nothing and says nothing.
            message = (
                f"{task.url} redirects (HTTP {status}) to {result.location}, outside "
                "`allow_prefixes`; nothing there is read; put the final address in "
                "`start_urls`/the sitemap, or add its prefix to `allow_prefixes`"
            )
            return Problem(task.url, task.guess, "redirect_out_of_scope", message, True), ()
        if status in (404, 410) or status in (301, 308):
            self._cache.forget(task.url)
            if task.guess != task.url:  # an alias: the page it pointed at may well live on
                return None, ()
            return Gone(task.url, task.guess, task.known), ()
        if status in (401, 403, 302, 303, 307):  # may pass: the page counts as present
            why = "refused access" if status in (401, 403) else f"redirects to {result.location}"
            message = f"{task.url} returned HTTP {status}: {why}"
            return Problem(task.url, task.guess, f"http_{status}", message, False), cached_links
        message = f"{task.url} returned HTTP {status}"
        return Problem(task.url, task.guess, f"http_{status}", message, True), ()

    def _read_page(self, task: Task, fetched: Fetched) -> tuple[Page | Gone | None, Sequence[str]]:
        media_type = fetched.media_type
        if media_type not in ACCEPTED_TYPES:
            return None, ()  # an image, an archive…: not a page, never downloaded
        final = self.in_scope(fetched.url) or task.url
        version = version_of(fetched.headers, fetched.body)
        if media_type not in HTML_TYPES:
            name = unquote(urlsplit(final).path.rsplit("/", 1)[-1]) or final
            self._cache.put(CachedPage(task.url, final, version, name, ()))
            robots = fetched.headers.get("x-robots-tag", "").lower()
            if "noindex" in robots or "none" in robots:  # the header is how a PDF says it
                return Gone(task.url, final, task.known), ()
            declared = declared_type(media_type, fetched.headers, fetched.body)
            return Page(task.url, final, version, name, fetched.body, declared), ()
        info = parse_page(fetched.body, fetched.headers)
        base = (info.base and canonicalize(info.base, fetched.url)) or fetched.url
        object_id = (info.canonical and self.in_scope(info.canonical, base)) or final
        links: list[str] = []
        if not info.nofollow:
            for href in info.links:
                link = self.in_scope(href, base)
                if link and link not in links and not NOT_PAGES.search(urlsplit(link).path):
                    links.append(link)
        self._cache.put(CachedPage(task.url, object_id, version, info.title, tuple(links)))
        if info.noindex:  # kept out of the index: one held before it said so leaves it
            if object_id != final:  # a print or AMP copy: its canonical page is another
                return None, links
            return Gone(task.url, object_id, task.known), links
        declared = declared_type("text/html", fetched.headers, fetched.body)
        return Page(task.url, object_id, version, info.title, fetched.body, declared), links
