"""Keyword search over the sqlite index: FTS5's bm25, and a way past a query's common words.

The full statement is one FTS5 query, ``{text title} : (terms) AND acl : (principals) [AND
src : (sources)]``, ordered by ``bm25()`` (``_ranked``). FTS5 offers no early stop (no
WAND): it scores every visible row that holds any of the words, at a cost per row that
grows with the phrases of the expression, the caller's ACL tokens included. For a query
of a rare word and common ones, asked by a caller who sees much of the index, that is
tens of thousands of rows for a top 80 that all hold the rare word.

So, as MaxScore does (Turtle & Flood, 1995), the query's plain words are split first
(``split_terms``): the *common* ones are the most frequent words whose bound together —
a word adds at most ``idf × (k1 + 1)`` to a row's bm25, whatever its frequency there —
stays below the idf of a rarer word; the others are *essential*. Then (``_by_essential``):

1. the rows holding an essential word are scored by the whole query: bm25 of ``(all) AND
   (essential)`` less bm25 of ``(essential)`` alone. Each phrase adds the same term to
   both sums (its idf is counted over the whole index, its frequency is the row's), so
   the difference is the row's full score, to within a rounding of the last bit;
2. their ACL, source and scopes are checked on their own rows (``visible_among``), outside
   FTS5 (an ACL phrase in the scored statement would add 0 to each score, at a cost);
3. when at least ``k`` are visible and the ``k``-th scores at least the common words'
   bound, no row without an essential word can reach the top ``k``: those are the
   answer. Otherwise the full statement runs, as it would have anyway.

It is tried only when it should pay: the essential words' rows are a small part of the
common ones', and the caller should see ``k`` of them (the ACL expression's share of the
index, remembered from earlier searches in ``SearchShares``).

A word found in more than half the chunks has a bm25 idf of ~0 (FTS5 clamps it to 1e-6)
yet makes the query touch every row, so it is left out first; the full query runs only
when the rest finds fewer than ``k`` visible chunks.

An open index that has kept the query's posting lists scores each of those statements
itself, to the bit, without the split (``_postings``); the split and the statements run
in SQL until then, and for queries it cannot score.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from headwater.sinks.base import SearchRequest
from headwater.sinks.sqlite._driver import Database
from headwater.sinks.sqlite._search import (
    BM25,
    HIT_COLUMNS,
    SearchShares,
    acl_match,
    chunk_count,
    fts_terms,
    hit,
    hit_rows,
    index_state,
    needed_sources,
    nothing_visible,
    visible_among,
)
from headwater.types import SearchHit

if TYPE_CHECKING:  # numpy loads with the memory, at an open index's second search
    from headwater.sinks.sqlite._postings import SearchMemory

# bm25's constants in FTS5 (fts5_aux.c): a word adds at most idf × (K1 + 1) to a score.
K1 = 1.2
# FTS5 clamps a word's idf to this when the word is in half the rows or more.
MIN_IDF = 1e-6
# The essential words' rows are scored twice and checked row by row: the split is tried
# only when the common words' rows outnumber theirs this many times.
SPLIT_GAIN = 4
# ... and when the caller should see at least this many times ``k`` of them.
VISIBLE_MARGIN = 1.5
# A share sampled from fewer candidate rows than this is not remembered.
SAMPLE_ROWS = 50
# The most word counts kept for one state of the index.
MAX_WORDS = 100_000
# A token FTS5 (unicode61) keeps as exactly one term, lowercased.
_PLAIN = re.compile(r"^[A-Za-z0-9]+$")
# The shape of the index's own ACL, source and scope tokens (``_schema._token``): a word
# of that shape may also count rows through those columns, so its count is not used.
_OWN_TOKEN = re.compile(r"^[psh][0-9a-f]{24}$")


def keyword_search(
    db: Database,
    request: SearchRequest,
    k: int,
    shares: SearchShares,
    counts: TermCounts,
    memory: SearchMemory | None = None,
) -> list[SearchHit]:
    """The ``k`` visible chunks best matching the request text by bm25 (higher is better);
    scored in ``memory`` (``_postings``) when it holds the words, otherwise in SQL."""
    terms = fts_terms(request.text)
    if not terms or nothing_visible(request):
        return []
    with db.snapshot():
        sources = needed_sources(db, request.sources)
        state = index_state(db)
        counts.follow(state)
        if memory is not None:
            memory.follow(state, keyword=True)
        visible = acl_match(request.principals, sources, request.scopes)
        total = chunk_count(db)
        docs = term_docs(db, terms, counts)
        rare = [t for t in terms if t not in docs or 2 * docs[t] <= total] or terms
        plan = _Plan(request, visible, k, docs, total, shares, memory)
        if rare != terms:
            hits = _best(db, plan, rare)
            if len(hits) >= k:
                return hits
        return _best(db, plan, terms)


class TermCounts:
    """How many chunks hold a word, remembered while FTS5's index stays as it was.

    Counting reads the word's whole posting list (~0.4 ms for a word in a quarter of 100k
    chunks). The key is ``index_state``, read in the search's own snapshot: what every
    write that changes the chunks' words changes, from any process.
    """

    def __init__(self) -> None:
        self._state: tuple[object, ...] | None = None
        self._counts: dict[str, int] = {}

    def follow(self, state: tuple[object, ...]) -> None:
        """Forget every count when ``state`` (this search's ``index_state``) is a new one."""
        if state != self._state:
            self._state, self._counts = state, {}

    def of(self, db: Database, words: Sequence[str]) -> dict[str, int]:
        """The number of chunks holding each of ``words`` (lowercase single tokens) in the
        state last followed."""
        if len(self._counts) > MAX_WORDS:
            self._counts = {}
        missing = sorted({w for w in words if w not in self._counts})
        if missing:
            marks = ", ".join("?" * len(missing))
            sql = f"SELECT term, doc FROM fts_terms WHERE term IN ({marks})"
            counted = {str(term): int(count) for term, count in db.execute(sql, missing)}
            self._counts.update({w: counted.get(w, 0) for w in missing})
        return {w: self._counts[w] for w in words}


def term_docs(db: Database, terms: Sequence[str], counts: TermCounts) -> dict[str, int]:
    """How many chunks hold each plain one-token term of ``terms`` (quoted FTS5 strings)."""
    plain = {t: t[1:-1].lower() for t in terms if _PLAIN.match(t[1:-1])}
    plain = {t: word for t, word in plain.items() if not _OWN_TOKEN.match(word)}
    if not plain:
        return {}
    found = counts.of(db, list(plain.values()))
    return {t: found[word] for t, word in plain.items()}


def idf(docs: int, total: int) -> float:
    """FTS5's bm25 idf of a word found in ``docs`` of ``total`` rows."""
    value = math.log((total - docs + 0.5) / (docs + 0.5))
    return value if value > 0.0 else MIN_IDF


@dataclass(frozen=True)
class Split:
    """A query's words as MaxScore sees them: those a top row must hold, and the rest."""

    essential: list[str]
    common: list[str]
    bound: float  # the most the common words add to any row's bm25
    essential_rows: int  # rows holding an essential word, at most


def split_terms(terms: Sequence[str], docs: dict[str, int], total: int) -> Split | None:
    """The most frequent words whose bound stays below a rarer word's idf as ``common``;
    None when every word is needed, a word's count is unknown, or nothing would be saved."""
    if len(terms) < 2 or any(t not in docs for t in terms):
        return None
    ordered = sorted(terms, key=lambda t: -docs[t])
    common: list[str] = []
    bound = 0.0
    for position, term in enumerate(ordered[:-1]):
        widened = bound + idf(docs[term], total) * (K1 + 1.0)
        if widened > max(idf(docs[t], total) for t in ordered[position + 1 :]):
            break
        common.append(term)
        bound = widened
    essential = [t for t in terms if t not in common]
    essential_rows = sum(docs[t] for t in essential)
    if not common or SPLIT_GAIN * essential_rows > sum(docs[t] for t in common):
        return None
    return Split(essential, [t for t in terms if t in common], bound, essential_rows)


@dataclass(frozen=True)
class _Plan:
    """What every statement of one keyword search shares."""

    request: SearchRequest
    visible: str  # the caller's ACL expression
    k: int
    docs: dict[str, int]
    total: int
    shares: SearchShares
    memory: SearchMemory | None


def _best(db: Database, plan: _Plan, terms: list[str]) -> list[SearchHit]:
    if plan.memory is not None:
        ranks = plan.memory.ranked(db, terms, plan.visible, plan.k, plan.docs)
        if ranks is not None:
            return hit_rows(db, ranks)
    split = split_terms(terms, plan.docs, plan.total)
    if split is not None:
        share = plan.shares.get(plan.visible)
        if (1.0 if share is None else share) * split.essential_rows >= VISIBLE_MARGIN * plan.k:
            hits = _by_essential(db, plan.request, terms, split, plan.visible, plan.k, plan.shares)
            if hits is not None:
                return hits
    return _ranked(db, terms, plan.visible, plan.k)


def _by_essential(
    db: Database,
    request: SearchRequest,
    terms: list[str],
    split: Split,
    visible: str,
    k: int,
    shares: SearchShares,
) -> list[SearchHit] | None:
    """The top ``k`` from the rows holding an essential word, or None when a row without
    one might still belong there."""
    essential = "{text title} : (" + " OR ".join(split.essential) + ")"
    whole = "{text title} : (" + " OR ".join(terms) + ") AND " + essential
    scored = f"SELECT rowid, {BM25} FROM fts WHERE fts MATCH ?"
    both: dict[int, float] = {int(r): float(s) for r, s in db.execute(scored, [whole])}
    alone: dict[int, float] = {int(r): float(s) for r, s in db.execute(scored, [essential])}
    seen = visible_among(db, request, list(both))
    if shares.get(visible) is None and len(both) >= SAMPLE_ROWS:
        shares.remember(visible, len(seen) / len(both))
    if len(seen) < k:
        return None
    ranks = sorted((both[rowid] - alone[rowid], rowid) for rowid in seen)[:k]
    # bm25 is negated in FTS5 (lower ranks first); the margin covers the last-bit rounding.
    if -ranks[-1][0] < split.bound * (1.0 + 1e-9):
        return None
    return hit_rows(db, ranks)


def _ranked(db: Database, terms: Sequence[str], visible: str, k: int) -> list[SearchHit]:
    """The full statement: FTS5 intersects the words' and the ACL's posting lists and
    scores every visible row holding a word (filtering afterwards, or in a join, either
    starves or picks a plan ~100× slower). ``bm25()`` is called in the statement, whose
    ``ORDER BY … LIMIT k`` keeps the best ``k`` as it goes; FTS5's own ``ORDER BY rank``
    sorted every match first (the same scores in 1.5× the time: docs/performance.md)."""
    match = "{text title} : (" + " OR ".join(terms) + ") AND " + visible
    sql = f"""
        WITH m AS MATERIALIZED (
            SELECT rowid AS id, {BM25} AS rank FROM fts WHERE fts MATCH ?
            ORDER BY rank, rowid LIMIT ?
        )
        SELECT {HIT_COLUMNS.format(score="-m.rank")}
        FROM m JOIN chunks c ON c.id = m.id
        ORDER BY m.rank, c.id
    """
    return [hit(row) for row in db.execute(sql, [match, k])]
