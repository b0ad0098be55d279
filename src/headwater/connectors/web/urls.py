"""Canonical URLs and crawl scope for the web connector.

A page's object id is its canonical URL, so two spellings of one address must give one
string: scheme and host lower-cased, default port dropped, dot segments resolved,
fragment removed, tracking parameters dropped and the rest sorted. ``Scope`` says which
canonical URLs belong to a source (allowed prefixes minus denied patterns).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from urllib.parse import parse_qsl, quote, urlencode, urljoin, urlsplit, urlunsplit

DEFAULT_DROP_QUERY_PARAMS: tuple[str, ...] = (
    "utm_*",
    "fbclid",
    "gclid",
    "dclid",
    "gbraid",
    "wbraid",
    "msclkid",
    "yclid",
    "twclid",
    "igshid",
    "mc_cid",
    "mc_eid",
    "_ga",
    "_gl",
    "_hsenc",
    "_hsmi",
    "mkt_tok",
)
DEFAULT_PORTS = {"http": 80, "https": 443}


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4, keeping a trailing slash where the input had one."""
    output: list[str] = []
    segments = path.split("/")
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == ".":
            if last:
                output.append("")
        elif segment == "..":
            if len(output) > 1:
                output.pop()
            if last:
                output.append("")
        else:
            output.append(segment)
    result = "/".join(output)
    return result if result.startswith("/") else "/" + result


def _dropped(name: str, drop: Sequence[str]) -> bool:
    lowered = name.lower()
    return any(fnmatchcase(lowered, pattern.lower()) for pattern in drop)


def canonicalize(
    url: str, base: str | None = None, drop: Sequence[str] = DEFAULT_DROP_QUERY_PARAMS
) -> str | None:
    """The canonical form of ``url`` (resolved against ``base``); None if not http(s)."""
    try:
        absolute = urljoin(base, url.strip()) if base else url.strip()
        parts = urlsplit(absolute)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname:
        return None
    host = parts.hostname.lower()
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    netloc = host if port in (None, DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    path = _remove_dot_segments(parts.path or "/")
    pairs = [
        (k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if not _dropped(k, drop)
    ]
    query = urlencode(sorted(pairs), quote_via=quote, safe="/:@!$'()*,;~")
    return urlunsplit((scheme, netloc, path, query, ""))


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of a canonical URL."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


@dataclass(frozen=True)
class Scope:
    """Which canonical URLs a source covers: under an allowed prefix, matching no deny."""

    allow_prefixes: tuple[str, ...]
    deny_patterns: tuple[re.Pattern[str], ...] = ()

    @classmethod
    def build(
        cls,
        allow_prefixes: Iterable[str],
        deny_patterns: Iterable[str],
        seeds: Iterable[str],
        drop: Sequence[str] = DEFAULT_DROP_QUERY_PARAMS,
    ) -> Scope:
        """Prefixes as given, or the origins of the seed URLs when none are given."""
        prefixes = [p for p in (canonicalize(a, drop=drop) for a in allow_prefixes) if p]
        if not prefixes:
            prefixes = sorted({origin_of(s) + "/" for s in (canonicalize(u) for u in seeds) if s})
        return cls(tuple(prefixes), tuple(re.compile(p) for p in deny_patterns))

    def allows(self, canonical_url: str) -> bool:
        """Whether ``canonical_url`` is under an allowed prefix and matches no deny pattern."""
        if not any(canonical_url.startswith(prefix) for prefix in self.allow_prefixes):
            return False
        return not any(pattern.search(canonical_url) for pattern in self.deny_patterns)
