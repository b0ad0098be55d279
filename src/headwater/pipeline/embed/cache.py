"""A content-addressed embedding cache: a chunk text is embedded once per model.

Keys are ``sha256(model_id + "\\0" + text)``, values float32 blobs, in one SQLite file
(WAL) in the state directory. ``CachedEmbedder`` wraps any embedder: it looks a batch up
with a few ``IN`` queries, embeds only the misses (each distinct text once), stores what
succeeded and returns every vector through float32, so a hit and a miss give the same
numbers. Failures are never cached.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

from headwater.errors import ItemError
from headwater.pipeline.embed.base import Embedder
from headwater.pipeline.embed.counting import count_tokens_many
from headwater.pipeline.embed.each import EmbedOutcome, embed_each, first_error

_LOOKUP_BATCH = 500  # SQLite allows 999+ parameters; stay well under


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
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA busy_timeout=10000")
            self._db.execute(
                # A rowid table: 1.5 kB rows in a WITHOUT ROWID b-tree make inserts 5× slower.
                "CREATE TABLE IF NOT EXISTS embeddings ("
                " key BLOB PRIMARY KEY, dimension INTEGER NOT NULL, vector BLOB NOT NULL)"
            )

    def get_many(self, keys: Sequence[bytes]) -> dict[bytes, list[float]]:
        """The cached vectors among ``keys``."""
        import numpy as np  # here, not at import: status and no-op syncs never need it

        found: dict[bytes, list[float]] = {}
        unique = list(dict.fromkeys(keys))
        with self._lock:
            for at in range(0, len(unique), _LOOKUP_BATCH):
                batch = unique[at : at + _LOOKUP_BATCH]
                marks = ",".join("?" * len(batch))
                rows = self._db.execute(
                    f"SELECT key, vector FROM embeddings WHERE key IN ({marks})", batch
                )
                for key, blob in rows:
                    found[key] = np.frombuffer(blob, dtype=np.float32).tolist()
        return found

    def put_many(self, items: Iterable[tuple[bytes, Sequence[float]]]) -> None:
        import numpy as np

        rows = [
            (key, len(vector), np.asarray(vector, dtype=np.float32).tobytes())
            for key, vector in items
        ]
        if not rows:
            return
        with self._lock:
            self._db.execute("BEGIN")
            try:
                self._db.executemany(
                    "INSERT OR IGNORE INTO embeddings (key, dimension, vector) VALUES (?, ?, ?)",
                    rows,
                )
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def __len__(self) -> int:
        with self._lock:
            (count,) = self._db.execute("SELECT count(*) FROM embeddings").fetchone()
        return int(count)

    def close(self) -> None:
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
        return self.inner.model_id

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    @property
    def max_tokens(self) -> int:
        return self.inner.max_tokens

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def count_tokens_batch(self, texts: Sequence[str]) -> list[int]:
        return count_tokens_many(self.inner, texts)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return first_error(self.embed_each(texts))

    def embed_each(self, texts: Sequence[str]) -> list[EmbedOutcome]:
        if not texts:
            return []
        model_id = self.inner.model_id
        keys = [cache_key(model_id, t) for t in texts]
        found = self.cache.get_many(keys)
        missing: dict[bytes, str] = {}
        for key, text in zip(keys, texts, strict=True):
            if key not in found:
                missing.setdefault(key, text)
        fresh: dict[bytes, EmbedOutcome] = {}
        if missing:
            import numpy as np

            outcomes = embed_each(self.inner, list(missing.values()))
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
