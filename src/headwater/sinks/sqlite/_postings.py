"""FTS5's bm25 without FTS5's cost a row: the query words' posting lists, read once per state
of the index, scored in numpy with the same float64 operations as ``bm25()`` itself.

For a query whose words are common, FTS5 scores every visible row holding one of them,
about 1.7 µs a row for a caller with three ACL tokens (those phrases are evaluated in
every row although they weigh 0): 8–11 ms of a search over 100k chunks whose words are
each in a quarter of them. ``bm25(fts, 1.0, 1.0, 0.0, 0.0)`` (fts5_aux.c) needs only:

- per phrase, the rows holding it in ``text`` or ``title`` and how often (``f``), read
  through an ``fts5vocab`` *instance* table; their number is the phrase's ``nHit``;
- per row, its length ``D`` in tokens over all four columns (``fts_docsize``);
- the row count and total length (FTS5's averages record), for ``avgdl``;

and the caller's visible rows are FTS5's own answer to the ACL expression (the listing
the vector half makes anyway, kept here per expression). Each phrase, in the expression's
order, adds ``idf × ((f × (k1 + 1)) / (f + k1 × ((1 − b) + (b × D) / avgdl)))`` to a
row's score, the operations fts5_aux.c performs in its order, so on the same IEEE float64
arithmetic (x86-64 builds contract nothing into fused multiply-adds) the scores are FTS5's
to the bit and the top ``k`` by (−score, rowid) is the SQL statement's answer. Both the
idf and a row's length are the state's, so what a word adds to each row holding it is
worked out once, when the word is loaded; a search picks the visible rows' shares and
sums them.

Everything is keyed on the index's state (``index_state``), which every write of the
chunks' words or ACL from any process changes; a new state starts afresh. Loading is done
only where it should pay: nothing until a state has served ``STEADY`` keyword searches and
is ``SETTLE_S`` seconds old (a one-shot ``search`` process, and an index written every few
seconds, search in SQL as before); then the row lengths (~30 ms per 100,000 chunks), and
a word at once when it is rare (``LOAD_NOW`` rows or fewer), otherwise at its second use
in the state (~0.12 µs a posting). A query runs here only when all its words are plain
single tokens (what unicode61 keeps whole, lowercased) and all are loaded. ``budget``
bytes cap what is held; past it the oldest listings and words go first.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from headwater.sinks.sqlite._ann import Ids, visible_ids
from headwater.sinks.sqlite._driver import Database

Floats = npt.NDArray[np.float64]
Rows = npt.NDArray[np.signedinteger[Any]]  # row ids: int32 below 2³¹, else int64
Counts = npt.NDArray[np.float32]
Adds = npt.NDArray[np.float64]

# bm25's constants in fts5_aux.c.
K1 = 1.2
B = 0.75
# FTS5's averages record in ``fts_data`` (fts5Int.h: FTS5_AVERAGES_ROWID) and its columns.
AVERAGES_ROWID = 1
COLUMNS = 4  # text, title, acl, src
# Bytes a posting may take: its row id and what it adds to the row's score (12 with row
# ids below 2³¹).
POSTING_BYTES = 16
# The keyword search of one state from which the memory is used: the row lengths cost
# ~30 ms per 100,000 chunks to read, a search in SQL 1.5–10 ms more than in memory, so an
# index written between every few searches keeps searching in SQL.
STEADY = 4
# ... and once this index state is this many seconds old (first seen by this memory):
# under a steady stream of writes every state is dropped before its loads could pay
# back (measured: 2 ms more CPU a search than SQL alone at one write a second).
SETTLE_S = 10.0
# A word held in at most this many rows is loaded at its first use (about 2 ms).
LOAD_NOW = 4_096
# The most ACL listings kept for one state.
MAX_LISTINGS = 1_024
# The instance table, per connection (``temp``): one row per occurrence of a word.
_INSTANCES = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.hw_fts_instances USING fts5vocab(main, fts, instance)"
)
_POSTINGS = (
    "SELECT group_concat(doc) FROM temp.hw_fts_instances "
    "WHERE term = ? AND col IN ('text', 'title')"
)


def varints(data: bytes | npt.NDArray[np.uint8]) -> npt.NDArray[np.int64]:
    """The SQLite varints (big-endian, 7 bits a byte) packed back to back in ``data``."""
    raw = np.frombuffer(data, np.uint8) if isinstance(data, bytes) else data
    ends = np.flatnonzero(raw < 0x80)
    starts = np.concatenate([[0], ends[:-1] + 1]).astype(np.int64)
    lengths = ends - starts + 1
    values = np.zeros(len(ends), np.int64)
    for step in range(int(lengths.max()) if len(lengths) else 0):
        more = lengths > step
        values[more] = (values[more] << 7) | (raw[starts[more] + step] & 0x7F)
    return values


class SearchMemory:
    """The posting lists, row lengths and ACL listings of one state of an open index."""

    def __init__(self, budget: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.budget = budget
        self.settle_s = SETTLE_S
        self._clock = clock
        self._state: tuple[object, ...] | None = None
        self._since = clock()
        self._clear()

    def _clear(self) -> None:
        self.searches = 0  # keyword searches in this state
        self._norms: Floats | None = None  # k1 × ((1 − b) + (b × D) / avgdl), by rowid
        self._unusable = False  # this state's row lengths do not fit: SQL until a new one
        self._rows = 0  # FTS5's row count
        self._postings: OrderedDict[str, tuple[Rows, Adds]] = OrderedDict()
        self._asked: set[str] = set()
        self._listings: OrderedDict[str, Ids] = OrderedDict()
        self._held = 0

    def follow(self, state: tuple[object, ...], *, keyword: bool = False) -> None:
        """Start afresh when ``state`` (this search's ``index_state``) is a new one; count
        a ``keyword`` search."""
        if state != self._state:
            self._state, self._since = state, self._clock()
            self._clear()
        self.searches += keyword

    def visible(self, db: Database, match: str, keep: set[str] | None = None) -> Ids:
        """The ids of the chunks matching the ACL expression ``match``, listed once a
        state; making room never drops the words in ``keep``."""
        found = self._listings.get(match)
        if found is not None:
            self._listings.move_to_end(match)
            return found
        found = visible_ids(db, match)
        if len(self._listings) >= MAX_LISTINGS:
            self._drop_listing()
        self._listings[match] = found
        self._held += found.nbytes
        self._within_budget(keep)
        return found

    def ranked(
        self, db: Database, terms: Sequence[str], match: str, k: int, docs: dict[str, int]
    ) -> list[tuple[float, int]] | None:
        """``(rank, rowid)`` of the best ``k`` visible rows for the quoted ``terms``, as
        the full SQL statement orders them (rank is bm25, negated); None when this query
        runs in SQL. ``docs`` are the words' row counts (any column), for the cost."""
        words = [t[1:-1].lower() for t in terms]
        if not all(w.isascii() and w.isalnum() for w in words):
            return None
        if self.searches < STEADY or self._clock() - self._since < self.settle_s:
            self._asked.update(words)
            return None
        if self._unusable:
            return None
        if not self._load(db, terms, docs):
            return None
        norms = self._norms
        assert norms is not None
        seen = np.zeros(len(norms), np.bool_)
        seen[self.visible(db, match, keep=set(words))] = True
        score = np.zeros(len(norms), np.float64)
        held = np.zeros(len(norms), np.bool_)
        for word in words:  # phrase by phrase, as fts5_aux.c sums them
            ids, adds = self._postings[word]
            self._postings.move_to_end(word)
            keep = seen[ids]
            ids = ids[keep]
            score[ids] += adds[keep]  # a word's rows are distinct
            held[ids] = True
        rows = np.flatnonzero(held)
        return _best(rows, score[rows], k)

    def _adds(self, ids: Rows, freqs: Counts) -> Adds:
        """What a word held ``freqs`` times in the rows ``ids`` adds to each one's score:
        its idf and the rows' lengths are the state's, so it is worked out once, when the
        word is loaded (a search then only picks the visible rows' shares)."""
        norms = self._norms
        assert norms is not None
        hits = len(ids)
        idf = math.log((self._rows - hits + 0.5) / (hits + 0.5))  # libm's, as FTS5's
        if idf <= 0.0:
            idf = 1e-6
        f = freqs.astype(np.float64)
        adds: Adds = idf * ((f * (K1 + 1.0)) / (f + norms[ids]))
        return adds

    def _load(self, db: Database, terms: Sequence[str], docs: dict[str, int]) -> bool:
        """Load what this query needs and should pay for; True when all of it is here."""
        rows = {t[1:-1].lower(): docs.get(t, LOAD_NOW + 1) for t in terms}
        if POSTING_BYTES * sum(rows.values()) > self.budget // 2:
            return False  # would push out most of what is held
        wanted = [w for w in rows if w not in self._postings]
        due = [w for w in wanted if w in self._asked or rows[w] <= LOAD_NOW]
        self._asked.update(wanted)
        if len(due) < len(wanted):
            return False
        if wanted and self._norms is None and not self._load_norms(db):
            self._unusable = True
            return False
        if wanted:
            db.execute(_INSTANCES)
        for word in wanted:
            ids, freqs = _postings(db.execute(_POSTINGS, [word])[0][0] or "")
            adds = self._adds(ids, freqs)
            self._postings[word] = ids, adds
            self._held += ids.nbytes + adds.nbytes
            self._within_budget(keep=set(rows))
        return self._norms is not None and all(w in self._postings for w in rows)

    def _load_norms(self, db: Database) -> bool:
        """Each row's length term, from ``fts_docsize`` and the averages record; False when
        they do not fit the budget or are not what this reader expects."""
        averages = db.execute("SELECT block FROM fts_data WHERE id = ?", [AVERAGES_ROWID])
        if not averages:
            return False
        totals = varints(bytes(averages[0][0]))
        listed = db.execute("SELECT group_concat(id), group_concat(hex(sz), '') FROM fts_docsize")
        ids = np.fromstring(listed[0][0] or "", dtype=np.int64, sep=",")
        sizes = varints(bytes.fromhex(listed[0][1] or ""))
        if len(totals) != COLUMNS + 1 or len(sizes) != COLUMNS * len(ids) or not len(ids):
            return False
        size = int(ids.max()) + 1
        if size * 9 > self.budget:  # the row lengths, and one byte a row for a search's mask
            return False
        self._rows = int(totals[0])
        average = float(totals[1:].sum()) / float(self._rows)
        lengths = sizes.reshape(-1, COLUMNS).sum(axis=1).astype(np.float64)
        norms = np.full(size, np.nan, np.float64)
        norms[ids] = K1 * ((1.0 - B) + (B * lengths) / average)
        self._norms = norms
        self._held += norms.nbytes
        return True

    def _within_budget(self, keep: set[str] | None) -> None:
        """Drop the oldest listings, then the oldest words not in ``keep``, past the budget."""
        while self._held > self.budget and len(self._listings) > 1:
            self._drop_listing()
        if self._held <= self.budget:
            return  # without listing every word held, at each word loaded
        for word in list(self._postings):
            if self._held <= self.budget:
                return
            if keep is None or word not in keep:
                ids, adds = self._postings.pop(word)
                self._held -= ids.nbytes + adds.nbytes

    def _drop_listing(self) -> None:
        _, dropped = self._listings.popitem(last=False)
        self._held -= dropped.nbytes


def _postings(listed: str) -> tuple[Rows, Counts]:
    """The distinct rows of a word's occurrences (one row id each) and how often each
    holds it."""
    rows = np.fromstring(listed, dtype=np.int64, sep=",")
    if not len(rows):
        return rows, np.zeros(0, np.float32)
    if len(rows) > 1 and bool(np.any(rows[1:] < rows[:-1])):
        rows = np.sort(rows)  # fts5vocab lists them in row order; never trusted blindly
    starts = np.flatnonzero(np.concatenate([[True], rows[1:] != rows[:-1]]))
    # 8 bytes a posting, not 16: row ids below 2³¹ as int32, counts as float32 (exact up
    # to 2²⁴ occurrences; widened to float64 before any arithmetic)
    counts = np.diff(np.concatenate([starts, [len(rows)]])).astype(np.float32)
    distinct = rows[starts]
    return (distinct.astype(np.int32) if distinct[-1] < 2**31 else distinct), counts


def _best(rows: Ids, score: Floats, k: int) -> list[tuple[float, int]]:
    """The ``k`` best by (rank, rowid), rank being the negated score as bm25() returns it."""
    rank = -score
    if len(rows) > k:
        edge = np.partition(rank, k - 1)[k - 1]
        inside = np.flatnonzero(rank <= edge)
        rows, rank = rows[inside], rank[inside]
    order = np.lexsort((rows, rank))[:k]
    return [(float(rank[i]), int(rows[i])) for i in order]
