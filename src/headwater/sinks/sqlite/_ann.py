"""Approximate vector search for the sqlite index: 1-bit codes pick candidates, exact cosine ranks.

Every chunk's vector also gets a binary code (one bit per dimension: its sign), stored per
document in ``ann_codes`` in the same transaction as the chunk rows. A search then:

1. reads the ids of the chunks the caller may see (the FTS5 ACL match, a posting-list
   intersection) — candidates are only ever drawn from these, so nothing invisible can be
   returned and a narrow caller is never starved (a caller who sees most of the index
   checks the ACL of its nearest chunks row by row instead: ``_search._wide``);
2. when the caller sees at most ``exact_below`` chunks, ranks all of them exactly;
3. otherwise keeps the ``SHORTLIST × candidates`` visible chunks nearest by Hamming
   distance between codes, narrows them to ``candidates`` by the float query's dot
   product with each code (finer: the query is not quantized), and ranks only those by
   exact cosine over their float vectors.

Step 3 needs the codes of arbitrary visible ids fast, so each open sink keeps them in a
numpy array indexed by chunk id (``dimension / 8`` bytes per chunk: 48 MB at 1M × 384),
loaded on first use and refreshed incrementally: every write bumps the ``ann_version``
counter in ``meta`` and stamps the document's code row with it, so a search reads only rows
newer than what it holds. A stale or missing code can cost recall, never correctness: the
visible set and the final scores always come from the same read snapshot.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from headwater.sinks.sqlite._driver import Database

Ids = npt.NDArray[np.int64]
Codes = npt.NDArray[np.uint64]

SHORTLIST = 8  # Hamming keeps this many × candidates for the finer code scores
BLOCK = 32_768  # ids per distance block: 6 words × 8 bytes × 32k = 1.5 MB at 384 dims


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


def ann_state(db: Database) -> tuple[int, str]:
    """The index's write version (``ann_version``, bumped by every write of a document's
    vectors and code row) and its epoch (``ann_epoch``, new at a migration)."""
    meta: dict[str, Any] = dict(
        db.execute("SELECT key, value FROM meta WHERE key IN ('ann_version', 'ann_epoch')")
    )
    return int(meta.get("ann_version", 0)), str(meta.get("ann_epoch", ""))


class CodeCache:
    """The codes of every chunk id, kept in step with ``ann_codes`` by version number.

    Stored word-major (``columns[w, id]``), so gathering the visible ids and counting bits
    are contiguous one-dimensional operations.
    """

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self.words = code_words(dimension)
        self.version = 0
        self.epoch = ""
        self.columns: Codes = np.zeros((self.words, 0), np.uint64)

    def refresh(self, db: Database) -> None:
        """Load the code rows written since the last refresh (all of them the first time)."""
        version, epoch = ann_state(db)
        if epoch != self.epoch or version < self.version:
            self.version, self.epoch = 0, epoch
            self.columns = np.zeros((self.words, 0), np.uint64)
        if version == self.version:
            return
        rows = db.execute("SELECT ids, bits FROM ann_codes WHERE version > ?", [self.version])
        if rows:
            ids = np.frombuffer(b"".join(r[0] for r in rows), np.int64)
            bits = np.frombuffer(b"".join(r[1] for r in rows), np.uint64).reshape(-1, self.words)
            self._grow(int(ids.max()) + 1)
            self.columns[:, ids] = bits.T
        self.version = version

    def _grow(self, size: int) -> None:
        held = self.columns.shape[1]
        if size <= held:
            return
        grown = np.zeros((self.words, max(size, 2 * held)), np.uint64)
        grown[:, :held] = self.columns
        self.columns = grown

    def distances(self, ids: Ids | None, query: Codes) -> npt.NDArray[np.uint16]:
        """Hamming distance from ``query`` (one code) to the code of each id (None: every id).

        Computed in blocks that fit the CPU cache. An id without a code (never expected
        after ``refresh``) reads as all zeros: it is ranked, not dropped.
        """
        if ids is not None and len(ids):
            self._grow(int(ids.max()) + 1)
        size = self.columns.shape[1] if ids is None else len(ids)
        found = np.empty(size, np.uint16)
        column = query.reshape(-1, 1)
        for start in range(0, size, BLOCK):
            end = min(start + BLOCK, size)
            if ids is None:
                picked = self.columns[:, start:end] ^ column
            else:
                picked = np.take(self.columns, ids[start:end], axis=1)
                picked ^= column
            np.sum(np.bitwise_count(picked), axis=0, dtype=np.uint16, out=found[start:end])
        return found


def smallest(found: npt.NDArray[np.uint16], count: int) -> Ids:
    """Positions of the ``count`` smallest values (ties: lower positions first), unordered."""
    if len(found) <= count:
        return np.arange(len(found), dtype=np.int64)
    cumulative = np.cumsum(np.bincount(found))
    edge = int(np.searchsorted(cumulative, count))
    inside = np.flatnonzero(found < edge)
    ties = np.flatnonzero(found == edge)[: count - len(inside)]
    return np.concatenate([inside, ties]).astype(np.int64)


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
    return ids[smallest(cache.distances(ids, query), count)]


def code_scores(
    cache: CodeCache, ids: Ids, vector: npt.NDArray[np.float32]
) -> npt.NDArray[np.float32]:
    """The float query against each id's code: the sum of the query over the code's set bits.

    That is the code's ±1 vector dotted with the query, up to a constant, so higher is
    nearer; it does not quantize the query, so it ranks finer than Hamming distance.
    Computed byte by byte from a 256-entry table per code byte (no BLAS, no unpacking).
    """
    size = cache.words * 8
    padded = np.zeros(size * 8, np.float32)
    padded[: cache.dimension] = vector
    table = padded.reshape(size, 8) @ _BITS_OF_BYTE.T  # table[b, v]: query over v's bits
    data = np.ascontiguousarray(np.take(cache.columns, ids, axis=1).T).view(np.uint8)
    offsets = np.arange(size, dtype=np.intp) * 256
    scores: npt.NDArray[np.float32] = table.ravel()[data + offsets].sum(axis=1, dtype=np.float32)
    return scores


_BITS_OF_BYTE = ((np.arange(256)[:, None] >> np.arange(8)) & 1).astype(np.float32)


def shortlist(
    cache: CodeCache, ids: Ids, query: Codes, vector: npt.NDArray[np.float32], count: int
) -> Ids:
    """``count`` candidates among ``ids``: ``SHORTLIST × count`` by Hamming, then code scores."""
    near = nearest(cache, ids, query, SHORTLIST * count)
    if len(near) <= count:
        return near
    return near[np.argpartition(-code_scores(cache, near, vector), count)[:count]]
