"""Feed bytes to entries: a defusedxml safety pass, then feedparser, then plain data.

feedparser reads RSS 0.9x/1.0/2.0 and Atom but parses with SAX; a document that
declares entities or external references is refused by defusedxml before feedparser
sees it, so entity expansion attacks cost nothing. Each entry becomes a ``FeedEntry``
whose version hashes what is indexed (title, link, content) and its update time; the
indexed bytes are a small HTML page, so fetch times and other volatile fields stay out
of the checksum.
"""

from __future__ import annotations

import calendar
import hashlib
import io
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape
from html.parser import HTMLParser
from typing import Any
from xml.etree.ElementTree import ParseError

import defusedxml.ElementTree as SafeET
import feedparser
from defusedxml import DefusedXmlException

from headwater.errors import ItemError
from headwater.types import MetadataValue


@dataclass(frozen=True)
class FeedEntry:
    """One entry of a feed: id, link, title, content and time."""

    object_id: str
    link: str | None
    title: str
    html: str
    updated_at: datetime | None
    metadata: Mapping[str, MetadataValue]

    @property
    def sequence(self) -> int | None:
        """The update time in epoch microseconds."""
        if self.updated_at is None:
            return None
        return calendar.timegm(self.updated_at.utctimetuple()) * 1_000_000

    def version(self, mode: str) -> str:
        """The entry's version hint in ``mode``: a hash of what the document is made of."""
        stamp = self.updated_at.isoformat() if self.updated_at else ""
        payload = json.dumps([mode, self.title, self.link, self.html, stamp])
        return "sha256:" + hashlib.sha256(payload.encode("utf-8")).hexdigest()

    def page(self) -> bytes:
        """The entry as a small HTML page (title, then its content) for the core parser."""
        title = escape(self.title)
        return (
            f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{title}</title></head>'
            f"<body><article><h1>{title}</h1>{self.html}</article></body></html>"
        ).encode()


def ensure_safe(data: bytes, url: str) -> None:
    """Refuse a feed that declares entities or external references (ItemError unsafe_xml)."""
    try:
        SafeET.fromstring(data, forbid_dtd=False, forbid_entities=True, forbid_external=True)
    except DefusedXmlException as exc:
        raise ItemError(
            "unsafe_xml",
            f"feed {url} declares XML entities or external references "
            f"({type(exc).__name__}); refusing it so entity expansion cannot run",
        ) from exc
    except ParseError:
        pass  # not well-formed: feedparser's lenient parser copes, and keeps no entities


def _when(entry: Any) -> datetime | None:
    for key in ("updated_parsed", "published_parsed", "created_parsed"):
        moment = dict.get(entry, key)  # plain lookup: FeedParserDict aliases and warns
        if moment:
            return datetime.fromtimestamp(calendar.timegm(moment), UTC)
    return None


def _html(entry: Any) -> str:
    parts = entry.get("content") or []
    detail = parts[0] if parts else entry.get("summary_detail")
    if detail is None:
        return ""
    value = str(detail.get("value", ""))
    if "html" in str(detail.get("type", "text/html")):
        return value
    return "<p>" + escape(value).replace("\n\n", "</p><p>") + "</p>"


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def _title_text(entry: Any) -> str:
    """The entry's title as text: an HTML title (Atom ``type="html"``, or an RSS title
    feedparser finds markup in) loses its tags and entities (``Q&amp;A <b>x</b>`` is
    ``Q&A x``), which would otherwise show in every search result."""
    title = str(entry.get("title", ""))
    detail = entry.get("title_detail") or {}
    if "html" not in str(detail.get("type", "")):
        return title
    parser = _Text()
    parser.feed(title)
    parser.close()
    return "".join(parser.parts)


def _metadata(entry: Any, feed_url: str) -> dict[str, MetadataValue]:
    found: dict[str, MetadataValue] = {"feed": feed_url}
    if entry.get("author"):
        found["author"] = str(entry["author"])
    tags = [str(t.get("term")) for t in entry.get("tags") or [] if t.get("term")]
    if tags:
        found["tags"] = tags
    if dict.get(entry, "published_parsed"):
        published = datetime.fromtimestamp(calendar.timegm(entry["published_parsed"]), UTC)
        found["published"] = published.isoformat()
    return found


def parse_feed(data: bytes, url: str, content_type: str | None) -> list[FeedEntry | ItemError]:
    """Entries in feed order; an entry with neither id nor link is an ItemError in place."""
    ensure_safe(data, url)
    headers = {"content-location": url}
    if content_type:
        headers["content-type"] = content_type
    parsed = feedparser.parse(io.BytesIO(data), response_headers=headers)
    if not parsed.get("version") and not parsed.entries:
        reason = parsed.get("bozo_exception") or "no RSS or Atom elements"
        raise ItemError("bad_feed", f"{url} is not an RSS or Atom feed: {reason}")
    # feedparser resolves a relative guid against the feed URL; the id is kept as the feed
    # wrote it, so a second parse without the URL gives the ids (links stay resolved).
    raw = feedparser.parse(io.BytesIO(data), response_headers=headers | {"content-location": ""})
    raw_ids = [e.get("id") for e in raw.entries] if len(raw.entries) == len(parsed.entries) else []
    entries: list[FeedEntry | ItemError] = []
    for number, entry in enumerate(parsed.entries, start=1):
        link = entry.get("link") or None
        written = raw_ids[number - 1] if raw_ids else None
        object_id = written or entry.get("id") or link
        if not object_id:
            entries.append(ItemError("no_id", f"entry {number} of {url} has no id, guid or link"))
            continue
        title = " ".join(_title_text(entry).split())
        entries.append(
            FeedEntry(
                str(object_id), link, title, _html(entry), _when(entry), _metadata(entry, url)
            )
        )
    return entries
