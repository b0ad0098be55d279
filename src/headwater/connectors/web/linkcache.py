"""What the crawler learned about each fetched URL, kept in the source's state directory.

A 304 has no body, so an unchanged page cannot show its links again. The cache keeps,
per fetched URL, the object id it resolved to (redirects, ``rel=canonical``), the version
hint and title it had, and its outgoing links. It is used only when its version equals
the one being confirmed, so a stale row can only cost a re-download, never a skipped
change. It never decides that a document is unchanged: the manifest's version does.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path

from headwater.retry import retry_while_sqlite_busy


@dataclass(frozen=True)
class CachedPage:
    """What was learned of a page last time: id, version, title and links."""

    url: str
    object_id: str
    version: str
    title: str
    links: tuple[str, ...]


class LinkCache:
    """A small SQLite table: url -> (object_id, version, title, links)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._lock = threading.Lock()
        with self._lock:
            retry_while_sqlite_busy(lambda: self._db.execute("PRAGMA journal_mode=WAL"))
            self._db.execute("PRAGMA synchronous=OFF")  # a cache: losing a row costs a GET
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS pages (url TEXT PRIMARY KEY, object_id TEXT NOT NULL,"
                " version TEXT NOT NULL, title TEXT NOT NULL, links TEXT NOT NULL)"
            )

    def get(self, url: str) -> CachedPage | None:
        """The cached page of ``url``, or None."""
        with self._lock:
            row = self._db.execute(
                "SELECT object_id, version, title, links FROM pages WHERE url = ?", (url,)
            ).fetchone()
        if row is None:
            return None
        return CachedPage(url, row[0], row[1], row[2], tuple(json.loads(row[3])))

    def put(self, page: CachedPage) -> None:
        """Cache ``page``, replacing what was cached for its URL."""
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO pages (url, object_id, version, title, links)"
                " VALUES (?, ?, ?, ?, ?)",
                (page.url, page.object_id, page.version, page.title, json.dumps(page.links)),
            )

    def forget(self, url: str) -> None:
        """Drop the cached page of ``url``."""
        with self._lock:
            self._db.execute("DELETE FROM pages WHERE url = ?", (url,))

    def close(self) -> None:
        """Close the cache's database."""
        with self._lock:
            self._db.close()
