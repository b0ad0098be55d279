"""Permission-filtered vector and keyword search over the sqlite index.

Both searches filter *before* they rank, so a caller gets ``k`` hits whenever ``k``
visible chunks match, however many invisible chunks rank higher (no starvation):

- Keyword: one FTS5 query of the words AND the caller's ACL match, ranked by bm25, or
  past a query's common words, the rows of its rarer ones with their ACL checked on
  their own rows (``_keyword``).
- Sources: the ``src`` term is left out when every document the index holds is of a
  requested source (a probe of the ``documents_source`` index per gap between them, in
  the search's own read snapshot): a term that passes every chunk still walks the whole
  posting list of each source it names.
- Vector: the same ACL match without terms lists the visible chunk ids (one read
  snapshot for the whole search). A caller who sees at most ``exact_below`` chunks gets
  them all ranked by sqlite-vec's ``vec_distance_cosine`` (exact); above that, 1-bit codes
  of the visible chunks pick ``candidates`` of them and only those are ranked exactly
  (``_ann``). Candidates are drawn from visible chunks only, so the top-k never starves.
  Either ranking is first narrowed by the int8 copies (``_copies``) to the chunks that
  can reach the top k. Listing the visible ids costs ~0.1 ms per 1,000 (an open index keeps
  each ACL expression's listing until the index changes: ``_postings``), so a caller whose
  previous search saw at least ``WIDE_SHARE`` of the index, and at least ``wide_from``
  chunks, instead checks the ACL of the nearest chunks of the whole index on their own
  rows (``_wide``: ~8 ms of row reads whatever the index's size, more than listing 55,000
  ids and ranking them), falling back to the listing when too few of them are visible.
  The ACL expressions' shares are remembered per open index (``SearchShares``), a hint
  for both searches.

User text never reaches MATCH as syntax: each whitespace-separated token becomes a quoted
FTS5 string and tokens are OR-ed, so ``foo-bar "x`` is a plain query, never an error.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from itertools import pairwise
from typing import TYPE_CHECKING

from headwater.sinks.base import SearchRequest
from headwater.sinks.sqlite._driver import Database
from headwater.sinks.sqlite._schema import principal_token, scope_token, source_token
from headwater.types import SearchHit

if TYPE_CHECKING:  # numpy and the codes load with the first vector search, not before
    import numpy as np
    import numpy.typing as npt

    from headwater.sinks.sqlite._ann import CodeCache, Codes, Ids
    from headwater.sinks.sqlite._copies import VectorCopies
    from headwater.sinks.sqlite._postings import SearchMemory

# The most vector hits one search returns (sqlite-vec's KNN limit, kept as the contract).
MAX_VECTOR_K = 4096
# Defaults of the sink's `exact_below` and `candidates` options (docs/performance.md).
EXACT_BELOW = 20_000
CANDIDATES = 1_000
# Default of the sink's `vector_copies_mb` option: the int8 copies' memory cap (`_copies`).
VECTOR_COPIES_MB = 256
# Default of the sink's `search_memory_mb` option: posting lists and ACL listings (`_postings`).
SEARCH_MEMORY_MB = 256
# Candidates per requested hit, when that is more than `candidates`.
CANDIDATES_PER_HIT = 10
# Gaps between requested sources probed by one statement.
PROBES = 200
# A caller whose last search saw at least this share of the chunks, and at least the
# sink's `wide_from` chunks (default WIDE_FROM), skips listing them.
WIDE_SHARE = 0.5
WIDE_FROM = 100_000
# FTS5's structure record in ``fts_data`` (fts5Int.h: FTS5_STRUCTURE_ROWID).
STRUCTURE_ROWID = 10
# A token made only of these characters carries no word for the FTS5 tokenizer.
_NO_WORD = re.compile(r"^[\W_]*$", re.UNICODE)
# The most ACL expressions whose share of the index is remembered.
MAX_SHARES = 1_024

# The keyword score: bm25 over text and title; the acl and src columns weigh nothing.
BM25 = "bm25(fts, 1.0, 1.0, 0.0, 0.0)"

HIT_COLUMNS = "c.chunk_id, c.document_id, c.ordinal, {score}, c.text, c.title, c.locator, c.source"


def fts_terms(text: str) -> list[str]:
    """The user's words as quoted FTS5 strings, without duplicates or empty ones."""
    terms: list[str] = []
    # FTS5 ends a string at NUL ("unterminated string"): control characters are separators.
    text = "".join(" " if ord(c) < 32 else c for c in text)
    for token in text.split():
        if _NO_WORD.match(token):
            continue
        quoted = '"' + token.replace('"', '""') + '"'
        if quoted not in terms:
            terms.append(quoted)
    return terms


def fts_query(text: str) -> str | None:
    """A safe FTS5 MATCH expression for free user text, or None when it has no words."""
    terms = fts_terms(text)
    return " OR ".join(terms) if terms else None


def acl_match(
    principals: Sequence[str], sources: Sequence[str] | None, scopes: Sequence[str] | None = None
) -> str:
    """The FTS5 expression matching chunks visible to ``principals`` in ``sources``, under
    one of ``scopes`` (scope tokens, matched as whole tokens: never a prefix)."""
    expr = "acl : (" + " OR ".join(principal_token(p) for p in principals) + ")"
    if sources is not None:
        expr += " AND src : (" + " OR ".join(source_token(s) for s in sources) + ")"
    if scopes is not None:
        expr += " AND src : (" + " OR ".join(scope_token(s) for s in scopes) + ")"
    return expr


# A hit of an index row (``HIT_COLUMNS``' order).
hit = SearchHit.of_row


def nothing_visible(request: SearchRequest) -> bool:
    return (
        not request.principals
        or (request.sources is not None and not request.sources)
        or (request.scopes is not None and not request.scopes)
    )


def vector_search(
    db: Database,
    request: SearchRequest,
    vector: bytes,
    codes: CodeCache,
    shares: SearchShares,
    *,
    exact_below: int,
    candidates: int,
    wide_from: int = WIDE_FROM,
    copies: VectorCopies | None = None,
    memory: SearchMemory | None = None,
) -> list[SearchHit]:
    """The ``k`` visible chunks nearest ``vector``; score is cosine similarity. ``memory``
    keeps the visible ids listed per ACL expression until the index changes."""
    import numpy as np

    from headwater.sinks.sqlite._ann import quantize, shortlist, visible_ids

    if nothing_visible(request):
        return []
    k = min(request.k, MAX_VECTOR_K)
    wanted = max(candidates, CANDIDATES_PER_HIT * k)
    with db.snapshot():
        match = acl_match(request.principals, needed_sources(db, request.sources), request.scopes)
        floats = np.frombuffer(vector, np.float32)
        query = quantize(floats.reshape(1, -1), codes.dimension)
        share = shares.get(match) or 0.0
        expected = int(share * chunk_count(db))
        if share >= WIDE_SHARE and expected > exact_below and expected >= wide_from:
            codes.refresh(db)
            picked = _wide(db, request, codes, (query, floats), wanted, share)
            if picked is not None:
                return _ranked_among(db, vector, picked, (copies, floats), k)
        if memory is None:
            visible = visible_ids(db, match)
        else:
            memory.follow(index_state(db))
            visible = memory.visible(db, match)
        shares.remember(match, len(visible) / max(chunk_count(db), 1))
        if len(visible) <= exact_below:
            near = _narrowed(db, visible, (copies, floats), k)
            if near is None:
                return _ranked_vectors(db, vector, _AMONG_VISIBLE, match, k)
            return _ranked_vectors(db, vector, _AMONG_LISTED, _listed(near), k)
        codes.refresh(db)
        picked = shortlist(codes, visible, query, floats, wanted)
        return _ranked_among(db, vector, picked, (copies, floats), k)


def _narrowed(
    db: Database,
    ids: Ids,
    query: tuple[VectorCopies | None, npt.NDArray[np.float32]],
    k: int,
) -> Ids | None:
    """Those of ``ids`` whose int8 copies say they can reach the top ``k`` (``_copies``),
    or None when there are no copies to ask."""
    copies, floats = query
    if copies is None or not copies.refresh(db):
        return None
    return copies.narrow(ids, floats, k)


def _ranked_among(
    db: Database,
    vector: bytes,
    ids: Ids,
    query: tuple[VectorCopies | None, npt.NDArray[np.float32]],
    k: int,
) -> list[SearchHit]:
    """Exact ranking of the candidates ``ids``, narrowed first when copies allow."""
    near = _narrowed(db, ids, query, k)
    return _ranked_vectors(db, vector, _AMONG_LISTED, _listed(ids if near is None else near), k)


# The chunks ranked, as the FROM clause of their vectors ``v`` (one parameter). The
# visible ones are joined to the ACL match row by row, FTS5's rows first (CROSS JOIN keeps
# that order): ``v.id IN (SELECT rowid ...)`` first copied every id into a temporary
# b-tree, a third of the ranking's instructions for a caller who sees 19,000 chunks.
_AMONG_VISIBLE = "fts CROSS JOIN vectors v ON v.id = fts.rowid WHERE fts MATCH ?"
_AMONG_LISTED = "vectors v WHERE v.id IN (SELECT value FROM json_each(?))"


def _listed(ids: Ids) -> str:
    return "[" + ",".join(map(str, ids.tolist())) + "]"


# What changes with every write of the chunks' words or ACL, from any process.
_STATE = (
    "SELECT "
    + ", ".join(
        f"(SELECT value FROM meta WHERE key = '{key}')"
        for key in ("ann_epoch", "ann_version", "chunk_count")
    )
    + f", (SELECT block FROM fts_data WHERE id = {STRUCTURE_ROWID})"
)


def index_state(db: Database) -> tuple[object, ...]:
    """What every write of the chunks' words or ACL changes, from any process:
    ``ann_version`` (bumped by every write of a document with chunks, never lowered),
    ``chunk_count`` (lowered by a write that only removes chunks), ``ann_epoch`` (new at a
    rebuild) and FTS5's structure record (``fts_data`` row 10, rewritten by every
    transaction that changes the full-text index, an ACL rewrite included; alone it is
    not enough: its write counter counts automerge's leaves too and restarts at a
    ``delete-all``). Read it in the search's own snapshot."""
    return tuple(db.execute(_STATE)[0])


def chunk_count(db: Database) -> int:
    """The chunks the index holds (kept in ``meta`` by every write)."""
    return int(db.execute("SELECT value FROM meta WHERE key = 'chunk_count'")[0][0])


def _wide(
    db: Database,
    request: SearchRequest,
    codes: CodeCache,
    query: tuple[Codes, npt.NDArray[np.float32]],
    wanted: int,
    share: float,
) -> Ids | None:
    """Candidates for a caller who sees most chunks, without listing what they see.

    The ``SHORTLIST × wanted / share`` chunks of the whole index nearest by Hamming
    distance are ordered by code score; the first ``1.5 × wanted / share`` are checked
    against the caller's ACL on their own rows, and when at least ``wanted`` are visible
    the first ``wanted`` of them are the candidates. Otherwise None: the caller takes the
    visible-set path.
    """
    import numpy as np

    from headwater.sinks.sqlite._ann import SHORTLIST, code_scores, smallest

    bits, floats = query
    found = codes.distances(None, bits)
    pool = smallest(found, math.ceil(SHORTLIST * wanted / share))
    pool = pool[np.argsort(-code_scores(codes, pool, floats), kind="stable")]
    head = pool[: math.ceil(1.5 * wanted / share)]
    seen = visible_among(db, request, head.tolist())
    survivors = [int(i) for i in head.tolist() if i in seen]
    if len(survivors) < wanted:
        return None
    return np.asarray(survivors[:wanted], np.int64)


def _ranked_vectors(db: Database, vector: bytes, among: str, arg: str, k: int) -> list[SearchHit]:
    """Exact cosine ranking of the chunks ``among`` (a FROM clause on ``arg``) names.

    A vector without direction (zero, or not finite: sqlite-vec answers NULL) scores 0,
    as an orthogonal one would, rather than failing the search of everyone who sees it."""
    sql = f"""
        WITH knn AS MATERIALIZED (
            SELECT v.id AS id, coalesce(vec_distance_cosine(v.embedding, ?), 1.0) AS distance
            FROM {among}
            ORDER BY distance, v.id LIMIT ?
        )
        SELECT {HIT_COLUMNS.format(score="1.0 - knn.distance")}
        FROM knn JOIN chunks c ON c.id = knn.id
        ORDER BY knn.distance, c.id
    """
    return [hit(row) for row in db.execute(sql, [vector, arg, k])]


def needed_sources(db: Database, sources: Sequence[str] | None) -> Sequence[str] | None:
    """``sources``, or None when every document ``db`` holds is of one of them: then the
    filter would pass every chunk (a chunk's source is its document's). Call it in the
    read snapshot of the search it plans."""
    if not sources:
        return sources
    wanted = sorted(set(sources))  # code point order: SQLite's BINARY order of UTF-8 text
    gaps = [("source < ?", [wanted[0]])]
    gaps += [("source > ? AND source < ?", [low, high]) for low, high in pairwise(wanted)]
    gaps.append(("source > ?", [wanted[-1]]))
    for start in range(0, len(gaps), PROBES):  # SQLite nests an expression 1,000 deep at most
        part = gaps[start : start + PROBES]
        probes = " OR ".join(f"EXISTS (SELECT 1 FROM documents WHERE {gap})" for gap, _ in part)
        if db.execute(f"SELECT {probes}", [bound for _, bounds in part for bound in bounds])[0][0]:
            return sources
    return None


class SearchShares:
    """The share of the index each ACL expression let through when last measured: a
    planning hint for the searches that follow (never a filter: a stale share costs time,
    not results)."""

    def __init__(self) -> None:
        self._shares: dict[str, float] = {}

    def get(self, match: str) -> float | None:
        """The share ``match`` let through last time, or None when never measured."""
        return self._shares.get(match)

    def remember(self, match: str, share: float) -> None:
        """Remember the share of chunks the ACL expression ``match`` let through."""
        if len(self._shares) >= MAX_SHARES:
            self._shares.clear()
        self._shares[match] = share


def visible_among(db: Database, request: SearchRequest, ids: Sequence[int]) -> set[int]:
    """Those of the chunk ``ids`` the request's principals may see in its sources and
    scopes, checked on the chunks' own ``acl`` and ``src`` (what the FTS5 ACL match reads)."""
    rows = db.execute(
        "SELECT id, acl, src FROM chunks WHERE id IN (SELECT value FROM json_each(?))",
        ["[" + ",".join(map(str, ids)) + "]"],
    )
    allowed = {principal_token(p) for p in request.principals}
    sources = None if request.sources is None else {source_token(s) for s in request.sources}
    scopes = None if request.scopes is None else {scope_token(s) for s in request.scopes}
    return {
        int(chunk)
        for chunk, acl, src in rows
        if not allowed.isdisjoint(str(acl).split())
        and (sources is None or str(src).split()[0] in sources)
        and (scopes is None or not scopes.isdisjoint(str(src).split()))
    }


def hit_rows(db: Database, ranks: Sequence[tuple[float, int]]) -> list[SearchHit]:
    """The hits of ``(rank, chunk rowid)`` pairs, in that order; score is ``-rank``."""
    order = {rowid: position for position, (_, rowid) in enumerate(ranks)}
    rows = db.execute(
        f"SELECT c.id, {HIT_COLUMNS.format(score='0.0')} FROM chunks c "
        "WHERE c.id IN (SELECT value FROM json_each(?))",
        ["[" + ",".join(str(rowid) for _, rowid in ranks) + "]"],
    )
    hits: list[SearchHit | None] = [None] * len(ranks)
    for rowid, *columns in rows:
        position = order[int(rowid)]
        columns[3] = -ranks[position][0]
        hits[position] = hit(columns)
    return [h for h in hits if h is not None]
