"""Sitemap parsing: urlsets, indexes, gzip, and hostile XML (unit tests, no network)."""

from __future__ import annotations

import gzip
import time

import pytest

from headwater.connectors.web import sitemaps
from headwater.errors import ItemError, TransientError

URLSET = (
    b'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
    b"<url><loc> https://e.com/a </loc><lastmod>2025-01-02</lastmod></url>"
    b"<url><loc>https://e.com/b</loc></url><url><lastmod>2025</lastmod></url></urlset>"
)

BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>&lol9;</loc></url></urlset>
"""

EXTERNAL_ENTITY = b"""<?xml version="1.0"?>
<!DOCTYPE urlset [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<urlset><url><loc>&xxe;</loc></url></urlset>"""


def test_urlset() -> None:
    kind, entries = sitemaps.parse_sitemap(URLSET, "s")
    assert kind == "urlset"
    assert entries == [("https://e.com/a", "2025-01-02"), ("https://e.com/b", None)]


def test_gzipped_urlset() -> None:
    assert sitemaps.parse_sitemap(gzip.compress(URLSET), "s")[1][0][0] == "https://e.com/a"


@pytest.mark.parametrize("hostile", [BILLION_LAUGHS, EXTERNAL_ENTITY])
def test_entity_attacks_are_rejected_at_once(hostile: bytes) -> None:
    started = time.monotonic()
    with pytest.raises(ItemError) as caught:
        sitemaps.parse_sitemap(hostile, "https://e.com/evil.xml")
    assert caught.value.error_class == "unsafe_xml"
    assert time.monotonic() - started < 1.0


def test_gzip_bomb_is_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sitemaps, "MAX_SITEMAP_BYTES", 1000)
    with pytest.raises(ItemError) as caught:
        sitemaps.parse_sitemap(gzip.compress(b" " * 100_000), "s")
    assert caught.value.error_class == "too_large"


@pytest.mark.parametrize("bad", [b"<html><body>no</body></html>", b"<urlset", b"\x1f\x8bnot gzip"])
def test_not_a_sitemap(bad: bytes) -> None:
    with pytest.raises(ItemError) as caught:
        sitemaps.parse_sitemap(bad, "s")
    assert caught.value.error_class == "bad_sitemap"


def test_walk_follows_indexes_and_reports_failures() -> None:
    index = (
        b"<sitemapindex><sitemap><loc>one</loc></sitemap><sitemap><loc>two</loc></sitemap>"
        b"<sitemap><loc>one</loc></sitemap><sitemap><loc>evil</loc></sitemap></sitemapindex>"
    )
    files = {"index": index, "one": URLSET, "evil": BILLION_LAUGHS}

    def fetch(url: str) -> bytes:
        if url == "two":
            raise TransientError("two is down")
        return files[url]

    found = list(sitemaps.walk(["index"], fetch))
    urls = [f.loc for f in found if isinstance(f, sitemaps.SitemapUrl)]
    failures = [(f.sitemap, f.error_class) for f in found if isinstance(f, sitemaps.SitemapFailure)]
    assert urls == ["https://e.com/a", "https://e.com/b"]
    assert failures == [("two", "transient"), ("evil", "unsafe_xml")]
