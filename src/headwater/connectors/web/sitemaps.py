"""Sitemaps: urlsets, sitemap indexes and gzipped files, parsed safely.

Every sitemap is parsed with defusedxml with DTDs forbidden, so an entity-expansion
("billion laughs") or external-entity file is rejected at once instead of hanging, and a
gzipped file is inflated only up to a cap. ``walk`` yields the page URLs of a set of
sitemaps and a ``SitemapFailure`` for each sitemap that could not be read; a caller that
needs a complete listing treats any failure as fatal. ``<lastmod>`` is kept only as a
hint: it never proves a page unchanged.
"""

from __future__ import annotations

import gzip
import io
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from xml.etree.ElementTree import Element, ParseError

import defusedxml.ElementTree as SafeET
from defusedxml import DefusedXmlException

from headwater.errors import HeadwaterError, ItemError

MAX_SITEMAP_BYTES = 50 * 1024 * 1024  # the sitemap protocol's own limit, uncompressed
MAX_INDEX_DEPTH = 4


@dataclass(frozen=True)
class SitemapUrl:
    """One URL a sitemap lists, with its lastmod and the sitemap it came from."""

    loc: str
    lastmod: str | None
    sitemap: str


@dataclass(frozen=True)
class SitemapFailure:
    """A sitemap that could not be read, and why."""

    sitemap: str
    error_class: str
    message: str
    permanent: bool


def _local(tag: object) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _inflate(data: bytes, url: str) -> bytes:
    if not data.startswith(b"\x1f\x8b"):
        return data
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as stream:
            inflated = stream.read(MAX_SITEMAP_BYTES + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise ItemError("bad_sitemap", f"sitemap {url} is not valid gzip: {exc}") from exc
    if len(inflated) > MAX_SITEMAP_BYTES:
        raise ItemError("too_large", f"sitemap {url} inflates past {MAX_SITEMAP_BYTES} bytes")
    return inflated


def parse_sitemap(data: bytes, url: str) -> tuple[str, list[tuple[str, str | None]]]:
    """``("urlset" | "sitemapindex", [(loc, lastmod), ...])``; ItemError if unusable."""
    try:
        root: Element = SafeET.fromstring(_inflate(data, url), forbid_dtd=True)
    except DefusedXmlException as exc:
        raise ItemError(
            "unsafe_xml", f"sitemap {url} declares a DTD or entities ({type(exc).__name__})"
        ) from exc
    except ParseError as exc:
        raise ItemError("bad_sitemap", f"sitemap {url} is not well-formed XML: {exc}") from exc
    kind = _local(root.tag)
    if kind not in ("urlset", "sitemapindex"):
        raise ItemError("bad_sitemap", f"sitemap {url} has root <{kind}>, not <urlset>")
    entries: list[tuple[str, str | None]] = []
    for child in root:
        loc = lastmod = None
        for field in child:
            name = _local(field.tag)
            if name == "loc" and field.text:
                loc = field.text.strip()
            elif name == "lastmod" and field.text:
                lastmod = field.text.strip()
        if loc:
            entries.append((loc, lastmod))
    return kind, entries


FetchSitemap = Callable[[str], bytes]


def walk(roots: Iterable[str], fetch: FetchSitemap) -> Iterator[SitemapUrl | SitemapFailure]:
    """Every page URL listed by ``roots`` (indexes followed), depth first, in file order.

    ``fetch`` returns a sitemap's bytes or raises a HeadwaterError (TransientError for a
    passing fault, ItemError otherwise); either becomes a ``SitemapFailure``.
    """
    seen: set[str] = set()

    def visit(url: str, depth: int) -> Iterator[SitemapUrl | SitemapFailure]:
        if url in seen:
            return
        seen.add(url)
        try:
            kind, entries = parse_sitemap(fetch(url), url)
        except HeadwaterError as exc:
            permanent = isinstance(exc, ItemError) and exc.permanent
            error_class = exc.error_class if isinstance(exc, ItemError) else "transient"
            yield SitemapFailure(url, error_class, str(exc), permanent)
            return
        if kind == "urlset":
            for loc, lastmod in entries:
                yield SitemapUrl(loc, lastmod, url)
        elif depth >= MAX_INDEX_DEPTH:
            yield SitemapFailure(url, "bad_sitemap", f"sitemap index {url} nests too deep", True)
        else:
            for loc, _lastmod in entries:
                yield from visit(loc, depth + 1)

    for root in roots:
        yield from visit(root, 0)
