"""A small WebDAV client: ``PROPFIND`` with ``Depth: 1`` and ``GET``, over httpx.

Transport faults and 429/5xx become ``TransientError`` and are retried through the one
retry helper; 401/403 become ``CredentialError`` and 404 ``NotFoundAtServer`` so the
connector decides what a missing collection means. Multistatus XML is parsed with
defusedxml.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from email.utils import parsedate_to_datetime
from urllib.parse import unquote, urlsplit

import httpx
from defusedxml import ElementTree

from headwater.clock import as_utc
from headwater.connectors.http import TRANSIENT_STATUSES, describe_network_error, parse_retry_after
from headwater.errors import CredentialError, ItemError, TransientError
from headwater.retry import RetryPolicy, call_with_retry

DAV = "{DAV:}"
PROPFIND_BODY = (
    b'<?xml version="1.0" encoding="utf-8"?><D:propfind xmlns:D="DAV:"><D:prop>'
    b"<D:resourcetype/><D:getetag/><D:getlastmodified/><D:getcontentlength/>"
    b"<D:getcontenttype/></D:prop></D:propfind>"
)


@dataclass(frozen=True)
class Entry:
    """One member of a collection, as PROPFIND lists it."""

    path: str  # the URL path, unquoted
    is_collection: bool
    etag: str
    modified: datetime | None
    length: int
    media_type: str | None
    # Set when the server listed the member without its properties (no 200 propstat, or
    # a response-level status such as 403): it exists, but cannot be read or compared.
    unreadable: str | None = None


class WebdavClient:
    """One httpx client for one server, with optional Basic auth."""

    def __init__(
        self, *, auth: tuple[str, str] | None, timeout: float, user_agent: str, attempts: int = 3
    ) -> None:
        self._client = httpx.Client(
            auth=auth, timeout=timeout, headers={"User-Agent": user_agent}, follow_redirects=True
        )
        self.policy = RetryPolicy(attempts=attempts)

    def close(self) -> None:
        """Close the HTTP client."""
        self._client.close()

    def request(
        self, method: str, url: str, *, policy: RetryPolicy | None = None, **kw: object
    ) -> httpx.Response:
        """The response to ``method`` on ``url``, network errors and busy answers retried."""

        def once() -> httpx.Response:
            try:
                response = self._client.request(method, url, **kw)  # type: ignore[arg-type]
            except httpx.HTTPError as exc:
                raise TransientError(describe_network_error(exc, url)) from exc
            if response.status_code in TRANSIENT_STATUSES:
                raise TransientError(
                    f"{method} {url} returned HTTP {response.status_code}; the server is busy "
                    "or failing",
                    retry_after=parse_retry_after(response.headers.get("retry-after")),
                )
            if response.status_code in (401, 403):
                raise CredentialError(
                    f"{method} {url} returned HTTP {response.status_code}; expected the "
                    "configured `username`/`password` to be allowed to read it; fix the "
                    "credentials or the server's permissions"
                )
            return response

        return call_with_retry(once, policy or self.policy)

    def propfind(self, url: str, *, policy: RetryPolicy | None = None) -> list[Entry]:
        """The members of collection ``url`` (itself excluded); ItemError when not 207."""
        response = self.request(
            "PROPFIND",
            url,
            policy=policy,
            content=PROPFIND_BODY,
            headers={"Depth": "1", "Content-Type": "application/xml"},
        )
        if response.status_code != 207:
            raise ItemError(
                f"http_{response.status_code}",
                f"PROPFIND {url} returned HTTP {response.status_code}; expected 207 Multi-Status",
                permanent=False,
            )
        own = unquote(urlsplit(url).path).rstrip("/")
        entries = [e for e in _parse(response.content) if e.path.rstrip("/") != own]
        return sorted(entries, key=lambda e: e.path)


def _parse(body: bytes) -> list[Entry]:
    try:
        root = ElementTree.fromstring(body)
    except ElementTree.ParseError as exc:
        raise ItemError("bad_multistatus", f"unreadable PROPFIND answer: {exc}") from exc
    entries: list[Entry] = []
    for response in root.iter(f"{DAV}response"):
        href = response.findtext(f"{DAV}href") or ""
        prop = None
        for propstat in response.iter(f"{DAV}propstat"):
            if " 200 " in (propstat.findtext(f"{DAV}status") or " 200 "):
                prop = propstat.find(f"{DAV}prop")
        if prop is None:  # listed, but its properties withheld: present, not readable
            status = response.findtext(f"{DAV}status") or next(
                (s.text or "" for s in response.iter(f"{DAV}status")), ""
            )
            path = unquote(urlsplit(href).path)
            entries.append(
                Entry(path, path.endswith("/"), "", None, 0, None, status.strip() or "no status")
            )
            continue
        kind = prop.find(f"{DAV}resourcetype")
        length = (prop.findtext(f"{DAV}getcontentlength") or "0").strip()
        entries.append(
            Entry(
                path=unquote(urlsplit(href).path),
                is_collection=kind is not None and kind.find(f"{DAV}collection") is not None,
                etag=(prop.findtext(f"{DAV}getetag") or "").strip(),
                modified=_date(prop.findtext(f"{DAV}getlastmodified") or ""),
                length=int(length) if length.isdigit() else 0,
                media_type=(prop.findtext(f"{DAV}getcontenttype") or "").split(";")[0].strip()
                or None,
            )
        )
    return entries


def _date(value: str) -> datetime | None:
    try:
        return as_utc(parsedate_to_datetime(value)) if value else None
    except (TypeError, ValueError):
        return None
