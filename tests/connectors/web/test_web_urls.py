"""Canonical URL and scope rules (unit tests, no network)."""

from __future__ import annotations

import httpx
import pytest

from headwater.connectors.web.page import conditional_headers, parse_page, version_of
from headwater.connectors.web.urls import Scope, canonicalize


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("HTTP://Example.COM/a", "http://example.com/a"),
        ("https://example.com:443/a", "https://example.com/a"),
        ("http://example.com:80/a", "http://example.com/a"),
        ("http://example.com:8080/a", "http://example.com:8080/a"),
        ("https://example.com", "https://example.com/"),
        ("https://example.com/a#section", "https://example.com/a"),
        ("https://example.com/a?b=2&a=1", "https://example.com/a?a=1&b=2"),
        ("https://example.com/a?utm_source=x&utm_medium=y&id=3", "https://example.com/a?id=3"),
        ("https://example.com/a?fbclid=1&gclid=2&UTM_Campaign=z", "https://example.com/a"),
        ("https://example.com/a/./b/../c", "https://example.com/a/c"),
        ("https://example.com/a/b/..", "https://example.com/a/"),
        ("https://example.com/a?q=hello%20world", "https://example.com/a?q=hello%20world"),
        ("https://example.com/a?flag", "https://example.com/a?flag="),
        ("https://example.com/Path/Case", "https://example.com/Path/Case"),
    ],
)
def test_canonicalize(raw: str, canonical: str) -> None:
    assert canonicalize(raw) == canonical


def test_relative_urls_resolve_against_their_base() -> None:
    assert (
        canonicalize("../b?x=1#f", "https://example.com/docs/a/")
        == "https://example.com/docs/b?x=1"
    )
    assert canonicalize("//Other.org/x", "https://example.com/") == "https://other.org/x"


@pytest.mark.parametrize(
    "raw", ["mailto:a@example.com", "javascript:void(0)", "ftp://example.com/x", "http://", ""]
)
def test_non_web_urls_have_no_canonical_form(raw: str) -> None:
    assert canonicalize(raw) is None


def test_custom_drop_list_replaces_the_default() -> None:
    assert canonicalize("https://e.com/?utm_source=a&sid=9", drop=["sid"]) == (
        "https://e.com/?utm_source=a"
    )


def test_scope_defaults_to_the_seed_origins_and_honours_denies() -> None:
    scope = Scope.build([], [r"/private/", r"\.pdf$"], ["https://Example.com/docs/start"])
    assert scope.allows("https://example.com/other")
    assert not scope.allows("https://example.com/private/x")
    assert not scope.allows("https://example.com/file.pdf")
    assert not scope.allows("https://example.org/")
    assert not scope.allows("http://example.com/")  # another scheme is another origin


def test_scope_with_prefixes() -> None:
    scope = Scope.build(["https://example.com/docs/"], [], ["https://example.com/"])
    assert scope.allows("https://example.com/docs/a")
    assert not scope.allows("https://example.com/blog/a")


def test_page_info() -> None:
    body = (
        b'<html><head><title> The\n Title </title><base href="/base/">'
        b'<link rel="canonical" href="/canon"><meta name="robots" content="noindex">'
        b'</head><body><a href="a">A</a><a rel="nofollow" href="b">B</a>'
        b'<area href="c"></body></html>'
    )
    info = parse_page(body, httpx.Headers({"content-type": "text/html"}))
    assert info.title == "The Title"
    assert info.canonical == "/canon" and info.base == "/base/"
    assert info.links == ["a", "c"]
    assert info.noindex and not info.nofollow


def test_page_charset_from_meta() -> None:
    body = '<meta charset="iso-8859-1"><title>Café</title>'.encode("latin-1")
    assert parse_page(body, httpx.Headers()).title == "Café"


def test_versions_round_trip_to_conditional_headers() -> None:
    headers = httpx.Headers({"etag": 'W/"x"', "last-modified": "Wed, 01 Jan 2025 10:00:00 GMT"})
    version = version_of(headers, b"body")
    assert conditional_headers(version) == {
        "If-None-Match": 'W/"x"',
        "If-Modified-Since": "Wed, 01 Jan 2025 10:00:00 GMT",
    }
    hashed = version_of(httpx.Headers(), b"body")
    assert "sha256" in hashed and conditional_headers(hashed) == {}
    assert version_of(httpx.Headers(), b"body") == hashed
    assert conditional_headers("not json") == {} and conditional_headers(None) == {}
