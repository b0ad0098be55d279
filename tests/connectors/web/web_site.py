"""A small web site for the web connector tests, served by the local HTTP server.

The site has a sitemap index pointing at a plain and a gzipped sitemap, a robots.txt
that disallows /private/, pages with ETag, Last-Modified or neither, a rel=canonical
page, an in-scope redirect, a tracking-parameter link and a link to an image.
"""

from __future__ import annotations

import gzip
from collections.abc import Callable
from xml.sax.saxutils import escape

from httpserver import LocalHttpServer, Reply

from headwater.connectors.web import WebConnector

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


MakeWeb = Callable[..., WebConnector]
