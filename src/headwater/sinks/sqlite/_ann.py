"""Approximate vector search for the sqlite index: 1-bit codes pick candidates, exact cosine ranks.

Every chunk's vector also gets a binary code (one bit per dimension: its sign), stored per
document in ``ann_codes`` in the same transaction as the chunk rows. A search then:

1. reads the ids of the chunks the caller may see (the FTS5 ACL match, a posting-list
   intersection) — candidates are only ever drawn from these, so nothing invisible can be
   returned and a narrow caller is never starved;
2. when the caller sees at most ``exact_below`` chunks, ranks all of them exactly;
3. otherwise takes the ``candidates`` visible chunks nearest by Hamming distance between
   codes and ranks only those by exact cosine over their float vectors.

Step 3 needs the codes of arbitrary visible ids fast, so each open sink keeps them in a
numpy array indexed by chunk id (``dimension / 8`` bytes per chunk: 48 MB at 1M × 384),
loaded on first use and refreshed incrementally: every write bumps the ``ann_version``
counter in ``meta`` and stamps the document's code row with it, so a search reads only rows
newer than what it holds. A stale or missing code can cost recall, never correctness: the
visible set and the final scores always come from the same read snapshot.
"""

from __future__ import annotations

import secrets
from typing import Any

import numpy as np
import numpy.typing as npt

from headwater.sinks.sqlite._driver import Database

Ids = npt.NDArray[np.int64]
Codes = npt.NDArray[np.uint64]


def code_words(dimension: int) -> int:
    """How many 64-bit words hold one code."""
    return (dimension + 63) // 64


def quantize(vectors: npt.NDArray[np.float32], dimension: int) -> Codes:
    """Sign bits of each row, packed little-endian into ``code_words(dimension)`` words."""
    bits = np.packbits(vectors > 0, axis=1, bitorder="little")
    padded = np.zeros((bits.shape[0], code_words(dimension) * 8), np.uint8)
    padded[:, : bits.shape[1]] = bits
    return padded.view(np.uint64)


def write_codes(db: Database, document_id: str, ids: list[int], vectors: bytes, dim: int) -> None:
    """Replace the document's code row with codes of ``vectors`` (float32, one per id)."""
    if not ids:
        db.execute("DELETE FROM ann_codes WHERE document_id = ?", [document_id])
        return
    matrix = np.frombuffer(vectors, np.float32).reshape(len(ids), dim)
    version = int(
        db.execute(
            "UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'ann_version' "
            "RETURNING value"
        )[0][0]
    )
    db.execute(
        "INSERT INTO ann_codes (document_id, version, ids, bits) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (document_id) DO UPDATE SET version = excluded.version, "
        "ids = excluded.ids, bits = excluded.bits",
        [
            document_id,
            version,
            np.asarray(ids, np.int64).tobytes(),
            quantize(matrix, dim).tobytes(),
        ],
    )


def new_epoch() -> str:
    """A fresh identity for a file's code rows; a cache holding another one starts over."""
    return secrets.token_hex(8)


class CodeCache:
    """The codes of every chunk id, kept in step with ``ann_codes`` by version number."""

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self.words = code_words(dimension)
        self.version = 0
        self.epoch = ""
        self.codes: Codes = np.zeros((0, self.words), np.uint64)

    def refresh(self, db: Database) -> None:
        """Load the code rows written since the last refresh (all of them the first time)."""
        meta: dict[str, Any] = dict(
            db.execute("SELECT key, value FROM meta WHERE key IN ('ann_version', 'ann_epoch')")
        )
        version, epoch = int(meta.get("ann_version", 0)), str(meta.get("ann_epoch", ""))
        if epoch != self.epoch or version < self.version:
            self.version, self.epoch = 0, epoch
            self.codes = np.zeros((0, self.words), np.uint64)
        if version == self.version:
            return
        rows = db.execute("SELECT ids, bits FROM ann_codes WHERE version > ?", [self.version])
        if rows:
            ids = np.frombuffer(b"".join(r[0] for r in rows), np.int64)
            bits = np.frombuffer(b"".join(r[1] for r in rows), np.uint64).reshape(-1, self.words)
            self._grow(int(ids.max()) + 1)
            self.codes[ids] = bits
        self.version = version

    def _grow(self, size: int) -> None:
        if size <= len(self.codes):
            return
        grown = np.zeros((max(size, 2 * len(self.codes)), self.words), np.uint64)
        grown[: len(self.codes)] = self.codes
        self.codes = grown

    def distances(self, ids: Ids, query: Codes) -> npt.NDArray[np.uint16]:
        """Hamming distance from ``query`` (one code) to the code of each id."""
        known = ids < len(self.codes)
        picked = self.codes[np.where(known, ids, 0)] ^ query.reshape(1, -1)
        found: npt.NDArray[np.uint16] = np.bitwise_count(picked[:, 0]).astype(np.uint16)
        for word in range(1, self.words):
            found += np.bitwise_count(picked[:, word])
        # An id without a code (never expected) is kept as a candidate, not dropped.
        found[~known] = 0
        return found


def visible_ids(db: Database, match: str) -> Ids:
    """Ids of the chunks matching the FTS5 ACL expression ``match``."""
    listed = db.execute("SELECT group_concat(rowid) FROM fts WHERE fts MATCH ?", [match])[0][0]
    if not listed:
        return np.zeros(0, np.int64)
    return np.fromstring(listed, dtype=np.int64, sep=",")


def nearest(cache: CodeCache, ids: Ids, query: Codes, count: int) -> Ids:
    """The ``count`` ids nearest ``query`` by Hamming distance (all of them if fewer)."""
    if len(ids) <= count:
        return ids
    found = cache.distances(ids, query)
    return ids[np.argpartition(found, count)[:count]]
