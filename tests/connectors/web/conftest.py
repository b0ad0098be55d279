"""A small web site on the local HTTP server, and a factory for web connectors over it.

The site has a sitemap index pointing at a plain and a gzipped sitemap, a robots.txt
that disallows /private/, pages with ETag, Last-Modified or neither, a rel=canonical
page, an in-scope redirect, a tracking-parameter link and a link to an image.
"""

from __future__ import annotations

import gzip
from collections.abc import Callable
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

import pytest
from httpserver import LocalHttpServer, Reply

from headwater.connectors.base import SourceContext
from headwater.connectors.web import WebConnector, WebOptions

LAST_MODIFIED = "Wed, 01 Jan 2025 10:00:00 GMT"


def page(title: str, *links: str, head: str = "", text: str = "") -> str:
    anchors = "".join(f'<a href="{href}">{href}</a> ' for href in links)
    body = text or f"This is the page called {title}. It has some words to index."
    return (
        f"<html><head><title>{title}</title>{head}</head>"
        f"<body><main><h1>{title}</h1><p>{body}</p><nav>{anchors}</nav></main></body></html>"
    )


def urlset(server: LocalHttpServer, *paths: str) -> bytes:
    urls = "".join(
        f"<url><loc>{escape(server.url(p))}</loc><lastmod>2025-01-01</lastmod></url>" for p in paths
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>'
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>'
    ).encode()


def sitemap_index(server: LocalHttpServer, *paths: str) -> bytes:
    maps = "".join(f"<sitemap><loc>{server.url(p)}</loc></sitemap>" for p in paths)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>'
        f'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{maps}</sitemapindex>'
    ).encode()


XML = "application/xml"


def build_site(server: LocalHttpServer) -> None:
    server.route(
        "/robots.txt", Reply(b"User-agent: *\nDisallow: /private/\n", content_type="text/plain")
    )
    server.html(
        "/",
        page(
            "Home",
            "/about",
            "/docs/a",
            "/docs/b?utm_source=news&x=1",
            "/files/logo.png",
            "/private/secret",
            "/old",
            "mailto:someone@example.org",
            f"http://127.0.0.1:{server.port + 1}/elsewhere",
        ),
        etag='"home-1"',
    )
    server.html("/about", page("About us", "/", "/docs/a#team"), last_modified=LAST_MODIFIED)
    server.html("/docs/a", page("Doc A", "/docs/b?x=1"), etag='"a-1"', last_modified=LAST_MODIFIED)
    server.html("/docs/b", page("Doc B", "/docs/c"), etag='"b-1"')
    server.html(
        "/docs/c", page("Doc C", head='<link rel="canonical" href="/docs/c-main">'), etag='"c-1"'
    )
    server.html("/private/secret", page("Secret"), etag='"s-1"')
    server.route("/old", Reply(status=301, headers={"Location": "/docs/a"}))
    server.route("/files/logo.png", Reply(b"\x89PNG....", content_type="image/png"))
    server.route(
        "/sitemap.xml",
        Reply(
            sitemap_index(server, "/sitemap-pages.xml", "/sitemap-more.xml.gz"), content_type=XML
        ),
    )
    server.route(
        "/sitemap-pages.xml", Reply(urlset(server, "/", "/about", "/docs/a"), content_type=XML)
    )
    more = gzip.compress(
        urlset(server, "/docs/b?utm_source=feed&x=1", "/docs/c", "/private/secret")
    )
    server.route("/sitemap-more.xml.gz", Reply(more, content_type="application/gzip"))


@pytest.fixture
def site(http_server: LocalHttpServer) -> LocalHttpServer:
    build_site(http_server)
    return http_server


MakeWeb = Callable[..., WebConnector]


@pytest.fixture
def make_web(site: LocalHttpServer, tmp_path: Path) -> MakeWeb:
    """``make_web(sitemaps=[...], ...)``: fast-retrying options, a shared state dir."""

    def make(**options: Any) -> WebConnector:
        defaults: dict[str, Any] = {
            "max_attempts": 2,
            "max_retry_wait": 0.05,
            "requests_per_second": 1000.0,
            "user_agent": "HeadwaterTest/1.0",
        }
        opts = WebOptions(**{**defaults, **options})
        return WebConnector(opts, SourceContext(source_id="site", state_dir=tmp_path / "state"))

    return make
