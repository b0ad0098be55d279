"""A content-addressed embedding cache: a chunk text is embedded once per model.

Keys are ``sha256(model_id + "\\0" + text)``, values float32 blobs, in one SQLite file
(WAL) in the state directory. ``CachedEmbedder`` wraps any embedder: it looks a batch up
with a few ``IN`` queries, embeds only the misses (each distinct text once), stores what
succeeded and returns every vector through float32, so a hit and a miss give the same
numbers. Failures are never cached.

Each entry carries ``last_used`` (unix seconds), written when it is stored and refreshed
by a hit at most once an hour (a hit costs a write only when its stamp is that old), so
``trim`` can evict the least recently used entries until the stored bytes (key plus
vector of each entry) are under ``[embedder] cache_max_bytes``. Freed pages are reused
by later inserts; the file does not shrink.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from headwater.errors import ItemError
from headwater.jsonview import JsonView
from headwater.pipeline.embed.base import Embedder
from headwater.pipeline.embed.counting import count_tokens_many
from headwater.pipeline.embed.each import EmbedOutcome, first_error
from headwater.pipeline.embed.tokens import TokenEmbedder, TokenIds, embed_tokens, token_ids_of
from headwater.retry import retry_while_sqlite_busy

_LOOKUP_BATCH = 500  # SQLite allows 999+ parameters; stay well under
_EVICT_BATCH = 1000
CACHE_FILE = "embeddings.db"  # in the state directory
TOUCH_AFTER_S = 3600  # a hit refreshes last_used when the stamp is older than this


@dataclass(frozen=True, eq=False)
class CacheTrim(JsonView):
    """What one ``EmbeddingCache.trim`` did."""

    max_bytes: int | None
    entries: int  # left in the cache
    bytes: int  # left in the cache (keys and vectors)
    evicted: int = 0
    evicted_bytes: int = 0

    def as_dict(self) -> dict[str, Any]:
        """The trim as a JSON-ready dict."""
        return {
            "max_bytes": self.max_bytes,
            "entries": self.entries,
            "bytes": self.bytes,
            "evicted": self.evicted,
            "evicted_bytes": self.evicted_bytes,
        }


def cache_key(model_id: str, text: str) -> bytes:
    """The 32-byte key of one text embedded by one model."""
    return hashlib.sha256(f"{model_id}\0{text}".encode()).digest()


class EmbeddingCache:
    """Vectors by ``cache_key``; safe to share between threads of one process."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._lock = threading.Lock()
        with self._lock:
            retry_while_sqlite_busy(lambda: self._db.execute("PRAGMA journal_mode=WAL"))
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA busy_timeout=10000")
            self._db.execute(
                # A rowid table: 1.5 kB rows in a WITHOUT ROWID b-tree make inserts 5× slower.
                "CREATE TABLE IF NOT EXISTS embeddings ("
                " key BLOB PRIMARY KEY, dimension INTEGER NOT NULL, vector BLOB NOT NULL,"
                " last_used INTEGER NOT NULL DEFAULT 0)"
            )
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(embeddings)")}
            if "last_used" not in columns:  # a cache written before last_used existed
                self._db.execute(
                    "ALTER TABLE embeddings ADD COLUMN last_used INTEGER NOT NULL DEFAULT 0"
                )
            self._db.execute(
                "CREATE INDEX IF NOT EXISTS ix_embeddings_last_used ON embeddings (last_used)"
            )

    def get_many(self, keys: Sequence[bytes]) -> dict[bytes, list[float]]:
        """The cached vectors among ``keys``."""
        import numpy as np  # here, not at import: status and no-op syncs never need it

        found: dict[bytes, list[float]] = {}
        unique = list(dict.fromkeys(keys))
        now = int(time.time())
        stale: list[bytes] = []
        with self._lock:
            for at in range(0, len(unique), _LOOKUP_BATCH):
                batch = unique[at : at + _LOOKUP_BATCH]
                marks = ",".join("?" * len(batch))
                rows = self._db.execute(
                    f"SELECT key, vector, last_used FROM embeddings WHERE key IN ({marks})",
                    batch,
                )
                for key, blob, last_used in rows:
                    found[key] = np.frombuffer(blob, dtype=np.float32).tolist()
                    if last_used < now - TOUCH_AFTER_S:
                        stale.append(key)
            for at in range(0, len(stale), _LOOKUP_BATCH):
                batch = stale[at : at + _LOOKUP_BATCH]
                marks = ",".join("?" * len(batch))
                self._db.execute(
                    f"UPDATE embeddings SET last_used = ? WHERE key IN ({marks})", [now, *batch]
                )
        return found

    def put_many(self, items: Iterable[tuple[bytes, Sequence[float]]]) -> None:
        """Store each (key, vector) of ``items``; a key already stored is kept as it is."""
        import numpy as np

        now = int(time.time())
        rows = [
            (key, len(vector), np.asarray(vector, dtype=np.float32).tobytes(), now)
            for key, vector in items
        ]
        if not rows:
            return
        with self._lock:
            self._db.execute("BEGIN")
            try:
                self._db.executemany(
                    "INSERT OR IGNORE INTO embeddings (key, dimension, vector, last_used)"
                    " VALUES (?, ?, ?, ?)",
                    rows,
                )
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def stored_bytes(self) -> int:
        """The bytes of every key and vector the cache holds."""
        with self._lock:
            (total,) = self._db.execute(
                "SELECT coalesce(sum(length(key) + length(vector)), 0) FROM embeddings"
            ).fetchone()
        return int(total)

    def trim(self, max_bytes: int | None) -> CacheTrim:
        """Evict least recently used entries until the stored bytes are ``max_bytes`` or
        less (oldest ``last_used`` first, then oldest insert). None: no cap, evict none."""
        total = self.stored_bytes()
        evicted = evicted_bytes = 0
        while max_bytes is not None and total - evicted_bytes > max_bytes:
            with self._lock:
                rows = self._db.execute(
                    "SELECT rowid, length(key) + length(vector) FROM embeddings"
                    " ORDER BY last_used, rowid LIMIT ?",
                    (_EVICT_BATCH,),
                ).fetchall()
                if not rows:
                    break
                doomed: list[int] = []
                for rowid, size in rows:
                    if total - evicted_bytes <= max_bytes:
                        break
                    doomed.append(rowid)
                    evicted_bytes += int(size)
                self._db.execute("BEGIN")
                try:
                    for at in range(0, len(doomed), _LOOKUP_BATCH):
                        part = doomed[at : at + _LOOKUP_BATCH]
                        marks = ",".join("?" * len(part))
                        self._db.execute(f"DELETE FROM embeddings WHERE rowid IN ({marks})", part)
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
                self._db.execute("COMMIT")
                evicted += len(doomed)
        return CacheTrim(max_bytes, len(self), total - evicted_bytes, evicted, evicted_bytes)

    def __len__(self) -> int:
        with self._lock:
            (count,) = self._db.execute("SELECT count(*) FROM embeddings").fetchone()
        return int(count)

    def close(self) -> None:
        """Close the cache's database."""
        with self._lock:
            self._db.close()

    def __enter__(self) -> EmbeddingCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class CachedEmbedder:
    """An embedder that asks ``cache`` first. ``hits``/``misses`` count texts looked
    up; ``embedded`` counts distinct texts the inner embedder produced a vector for."""

    def __init__(self, inner: Embedder, cache: EmbeddingCache) -> None:
        self.inner = inner
        self.cache = cache
        self.hits = 0
        self.misses = 0
        self.embedded = 0
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        """The wrapped embedder's model id."""
        return self.inner.model_id

    @property
    def dimension(self) -> int:
        """The wrapped embedder's vector length."""
        return self.inner.dimension

    @property
    def max_tokens(self) -> int:
        """The wrapped embedder's token limit per text."""
        return self.inner.max_tokens

    def count_tokens(self, text: str) -> int:
        """Tokens the wrapped model would read for ``text``."""
        return self.inner.count_tokens(text)

    def count_tokens_batch(self, texts: Sequence[str]) -> list[int]:
        """Tokens the wrapped model would read for each text."""
        return count_tokens_many(self.inner, texts)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text (cached or computed), or the first error."""
        return first_error(self.embed_each(texts))

    def token_ids_batch(self, texts: Sequence[str]) -> list[list[int]] | None:
        """The wrapped model's plain token ids of each text, when it gives ids and takes
        them back (``embed_tokens``); else None."""
        if isinstance(self.inner, TokenEmbedder):
            return token_ids_of(self.inner, texts)
        return None

    def embed_each(self, texts: Sequence[str]) -> list[EmbedOutcome]:
        """One vector or error per text: cached ones read, the rest embedded and stored."""
        return self.embed_tokens(texts, None)

    def embed_tokens(
        self, texts: Sequence[str], ids: Sequence[TokenIds | None] | None
    ) -> list[EmbedOutcome]:
        """As ``embed_each``; the misses' token ids (when given) go to the wrapped model."""
        if not texts:
            return []
        model_id = self.inner.model_id
        keys = [cache_key(model_id, t) for t in texts]
        found = self.cache.get_many(keys)
        missing: dict[bytes, str] = {}
        missing_ids: dict[bytes, TokenIds | None] = {}
        for at, (key, text) in enumerate(zip(keys, texts, strict=True)):
            if key not in found and key not in missing:
                missing[key] = text
                missing_ids[key] = None if ids is None else ids[at]
        fresh: dict[bytes, EmbedOutcome] = {}
        if missing:
            import numpy as np

            given = None if ids is None else list(missing_ids.values())
            outcomes = embed_tokens(self.inner, list(missing.values()), given)
            stored: list[tuple[bytes, list[float]]] = []
            for key, outcome in zip(missing, outcomes, strict=True):
                if isinstance(outcome, ItemError):
                    fresh[key] = outcome
                else:
                    vector = np.asarray(outcome, dtype=np.float32).tolist()
                    fresh[key] = vector
                    stored.append((key, vector))
            self.cache.put_many(stored)
        with self._lock:
            hit_count = sum(1 for key in keys if key in found)
            self.hits += hit_count
            self.misses += len(keys) - hit_count
            self.embedded += sum(1 for o in fresh.values() if not isinstance(o, ItemError))
        return [found[key] if key in found else fresh[key] for key in keys]
