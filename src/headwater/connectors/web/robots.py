"""robots.txt rules per origin, fetched once per run with the configured user agent.

A missing robots.txt (4xx) allows everything; a server error or an unreachable host is a
``TransientError``, because guessing "allowed" would crawl what the owner may forbid and
guessing "disallowed" would make every page look deleted. Parsing is urllib.robotparser's.
"""

from __future__ import annotations

import threading
from urllib.robotparser import RobotFileParser

from headwater.connectors.http import HttpClient
from headwater.connectors.web.urls import origin_of
from headwater.errors import ItemError, TransientError

MAX_ROBOTS_BYTES = 512 * 1024


class RobotsRules:
    """``allowed(url)`` for canonical URLs; thread-safe, one fetch per origin."""

    def __init__(self, client: HttpClient, user_agent: str, enabled: bool = True) -> None:
        self._client = client
        self._agent = user_agent
        self._enabled = enabled
        self._parsers: dict[str, RobotFileParser] = {}
        self._lock = threading.Lock()

    def allowed(self, url: str) -> bool:
        """Whether robots.txt lets the crawler fetch ``url`` (always, when robots are off)."""
        if not self._enabled:
            return True
        origin = origin_of(url)
        with self._lock:
            parser = self._parsers.get(origin)
            if parser is None:
                parser = self._parsers[origin] = self._load(origin)
        return parser.can_fetch(self._agent, url)

    def _load(self, origin: str) -> RobotFileParser:
        url = f"{origin}/robots.txt"
        parser = RobotFileParser(url)
        try:
            fetched = self._client.get(url, max_bytes=MAX_ROBOTS_BYTES, follow=lambda target: True)
        except ItemError:  # too large or a redirect loop: treat as no rules, as Google does
            fetched = None
        if fetched is None or 400 <= fetched.status < 500:
            parser.parse([])
        elif fetched.status == 200:
            parser.parse(fetched.body.decode("utf-8", errors="replace").splitlines())
        else:
            raise TransientError(
                f"{url} returned HTTP {fetched.status}; expected robots.txt or a 404; "
                "the crawl waits until the site answers"
            )
        return parser
