"""What the web connector needs from an HTML page: title, canonical link, links, robots.

The stdlib HTML parser is enough and never fails on broken markup; main-content
extraction is the core parser's job (trafilatura), so the raw bytes go on unchanged.
Version hints (ETag, Last-Modified) are kept as compact JSON and turned back into
conditional request headers.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

import httpx

from headwater.connectors.http import header_charset, served_charset

_CHARSET = re.compile(rb"""<meta[^>]+charset=["']?([A-Za-z0-9_.:-]+)""", re.IGNORECASE)


@dataclass
class PageInfo:
    """What a page says of itself: title, canonical URL, base, links and robots rules."""

    title: str = ""
    canonical: str | None = None
    base: str | None = None
    links: list[str] = field(default_factory=list)
    noindex: bool = False
    nofollow: bool = False


class _PageParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.info = PageInfo()
        self._in_title = False
        self._title: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k.lower(): (v or "") for k, v in attrs}
        rel = a.get("rel", "").lower().split()
        if tag == "title" and not self._title:
            self._in_title = True
        elif tag == "base" and a.get("href") and self.info.base is None:
            self.info.base = a["href"]
        elif tag == "link" and "canonical" in rel and a.get("href"):
            self.info.canonical = self.info.canonical or a["href"]
        elif tag == "meta" and a.get("name", "").lower() in ("robots", "headwater"):
            directives = {d.strip() for d in a.get("content", "").lower().split(",")}
            self.info.noindex |= bool(directives & {"noindex", "none"})
            self.info.nofollow |= bool(directives & {"nofollow", "none"})
        elif tag in ("a", "area") and a.get("href") and "nofollow" not in rel:
            self.info.links.append(a["href"])

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self._title.append(data)

    def close(self) -> None:
        super().close()
        self.info.title = " ".join("".join(self._title).split())


def declared_type(media_type: str, headers: httpx.Headers, body: bytes) -> str:
    """``media_type`` with the charset the page is served in, so the parser decodes the
    body as served (a short page in KOI8-R or Shift_JIS defeats charset detection)."""
    charset = served_charset(headers, body)
    return f"{media_type}; charset={charset}" if charset else media_type


def decode_html(body: bytes, headers: httpx.Headers) -> str:
    """Text of an HTML body: the header charset, else a meta charset, else UTF-8."""
    charset = header_charset(headers)
    if charset is None:
        found = _CHARSET.search(body[:4096])
        charset = found.group(1).decode("ascii") if found else "utf-8"
    try:
        return body.decode(charset, errors="replace")
    except LookupError:
        return body.decode("utf-8", errors="replace")


def parse_page(body: bytes, headers: httpx.Headers) -> PageInfo:
    """The PageInfo of an HTML ``body``."""
    parser = _PageParser()
    parser.feed(decode_html(body, headers))
    parser.close()
    robots = headers.get("x-robots-tag", "").lower()
    parser.info.noindex |= "noindex" in robots or "none" in robots
    parser.info.nofollow |= "nofollow" in robots or "none" in robots
    return parser.info


def version_of(headers: httpx.Headers, body: bytes) -> str:
    """The version hint of a response: its validators, else a hash of its body."""
    hint = {
        key: value
        for key, value in (
            ("etag", headers.get("etag")),
            ("last_modified", headers.get("last-modified")),
        )
        if value
    }
    if not hint:
        hint = {"sha256": hashlib.sha256(body).hexdigest()}
    return json.dumps(hint, sort_keys=True, separators=(",", ":"))


def conditional_headers(version: str | None) -> dict[str, str]:
    """If-None-Match / If-Modified-Since for a stored version hint (none if it has none)."""
    if not version:
        return {}
    try:
        hint = json.loads(version)
    except ValueError:
        return {}
    if not isinstance(hint, dict):
        return {}
    headers: dict[str, str] = {}
    if isinstance(hint.get("etag"), str):
        headers["If-None-Match"] = hint["etag"]
    if isinstance(hint.get("last_modified"), str):
        headers["If-Modified-Since"] = hint["last_modified"]
    return headers
