"""Hybrid fusion: merge a vector and a keyword hit list into one ranking, purely.

Cosine similarities and bm25 scores live on different scales, so every method here
first puts them on a common footing, then adds them up. Each is a pure function of the
two ranked lists and their raw scores (no query, no I/O), deterministic, and merges a
chunk found in both lists into one hit carrying the fused score.

- ``rrf``: reciprocal rank fusion, ``sum(1 / (k + rank))``; scores are ignored, so a
  keyword hit that matched every word of the query counts no more than a lucky one.
- ``minmax``: each list's scores min-max scaled to [0, 1] then weighted (relative score
  fusion); absent from a list counts as 0 there.
- ``zscore``: each list's scores standardized, then weighted; absent counts as the
  list's lowest.
- ``confident`` (the default): ``minmax``, plus a rule that trusts a list when it is sure:
  a list whose top hit leads its runner-up by a wide margin (relative to the top score)
  puts that hit first. Keyword wins a tie between two confident lists, because an exact
  match that stands out is rarely wrong. Measured on man pages in
  ``bench/retrieval`` (docs/performance.md, "Retrieval quality").

On top of any method, ``fuse`` given the query puts the chunks that contain it as a
phrase (three words or more, case and punctuation aside) first: a pasted sentence or
error message belongs to the chunk that holds it, whatever the two scores say. That rule
reads the query and the hits' text; the methods themselves read neither.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence

from headwater.search.terms import matches_at_word_start
from headwater.types import SearchHit

DEFAULT_RRF_K = 60
DEFAULT_FUSION = "confident"
# Weight of the keyword list in the score-based methods (the vector list gets 1 - this).
KEYWORD_WEIGHT = 0.5
# A list is confident when (top - second) / |top| is at least this.
KEYWORD_MARGIN = 0.25
VECTOR_MARGIN = 0.15
# The weights of the vector and the keyword list.
WEIGHTS = (1.0 - KEYWORD_WEIGHT, KEYWORD_WEIGHT)
# A query of at least this many words found verbatim (as a phrase) in a chunk puts it first.
PHRASE_MIN_WORDS = 3
_WORD = re.compile(r"\w+")
_WORD_CHAR = re.compile(r"\w")

Fusion = Callable[[Sequence[SearchHit], Sequence[SearchHit], int], list[SearchHit]]


def reciprocal_rank_fusion(
    lists: Sequence[Sequence[SearchHit]], k: int = DEFAULT_RRF_K, limit: int = 10
) -> list[SearchHit]:
    """The best ``limit`` chunks of ``lists`` by fused score (higher is better).

    A chunk found in several lists appears once, as its first occurrence with the fused
    score. Ties keep the order in which chunks were first met, so the result is
    deterministic. A chunk repeated inside one list counts only at its best rank there.
    """
    if k < 0:
        raise ValueError(f"rrf k was {k}; expected k >= 0 (60 is customary)")
    scores: list[dict[str, float]] = []
    for hits in lists:
        ranked: dict[str, float] = {}
        for rank, hit in enumerate(hits, start=1):
            ranked.setdefault(hit.chunk_id, 1.0 / (k + rank))
        scores.append(ranked)
    return _ranked(lists, [1.0] * len(lists), scores, limit)


def fuse(
    vector: Sequence[SearchHit],
    keyword: Sequence[SearchHit],
    *,
    limit: int = 10,
    method: str = DEFAULT_FUSION,
    query: str | None = None,
) -> list[SearchHit]:
    """The best ``limit`` chunks of the two lists fused by ``method`` (see ``FUSIONS``);
    given the ``query``, chunks that contain it as a phrase go first (``phrase_first``)."""
    try:
        fusion = FUSIONS[method]
    except KeyError:
        raise ValueError(
            f"fusion method {method!r} is unknown; expected one of {', '.join(FUSIONS)}"
        ) from None
    if query is None:
        return fusion(vector, keyword, limit)
    fused = fusion(vector, keyword, len(vector) + len(keyword))  # every chunk, ranked
    return phrase_first(query, fused)[: max(limit, 0)]


def phrase_first(query: str, hits: Sequence[SearchHit]) -> list[SearchHit]:
    """``hits`` with those whose text contains ``query`` as a phrase moved to the front,
    each group in its own order, the moved ones' scores lifted above the rest's.

    A phrase: the query's words, case and punctuation aside, in order and adjacent;
    queries of fewer than ``PHRASE_MIN_WORDS`` words move nothing (for one or two words,
    containing them is what keyword search already ranks).
    """
    phrase = _WORD.findall(query.casefold())
    if len(phrase) < PHRASE_MIN_WORDS:
        return list(hits)
    # The phrase's words with only non-word characters between them, not inside a longer
    # word: what `" w1 w2 " in " ".join(words of the text)` asks, without listing the
    # text's words (a search checks some 160 chunks of ~900 characters).
    # A text without each word somewhere cannot hold the phrase: most hits stop there,
    # and the pattern is compiled only for a search where some hit might.
    texts = [hit.text.casefold() for hit in hits]
    maybe: Sequence[int] = range(len(texts))  # the hits holding every word met so far
    for word in phrase:
        maybe = [i for i in maybe if word in texts[i]]
    if not maybe:
        return list(hits)
    needle = re.compile(r"\W+".join(map(re.escape, phrase)) + r"(?!\w)")
    containing = [hits[i] for i in maybe if matches_at_word_start(needle, texts[i], _WORD_CHAR)]
    if not containing:
        return list(hits)
    moved = {id(hit) for hit in containing}
    rest = [hit for hit in hits if id(hit) not in moved]
    # Scores stay in rank order: the moved hits are lifted by one shift above the rest.
    shift = max(0.0, max((h.score for h in rest), default=0.0) - min(h.score for h in containing))
    lifted = [hit.rescored(hit.score + shift + 1.0) for hit in containing] if rest else containing
    return lifted + rest


def hybrid_fusion(
    lists: Sequence[Sequence[SearchHit]], k: int = DEFAULT_RRF_K, limit: int = 10
) -> list[SearchHit]:
    """``reciprocal_rank_fusion``'s signature with the default method: ``lists`` is
    ``[vector, keyword]`` (either may be missing or empty); ``k`` is ignored unless the
    default is ``rrf``. A drop-in for callers of the old function."""
    if len(lists) > 2:
        raise ValueError(f"hybrid fusion got {len(lists)} lists; expected [vector, keyword]")
    if DEFAULT_FUSION == "rrf":
        return reciprocal_rank_fusion(lists, k=k, limit=limit)
    vector = lists[0] if lists else []
    keyword = lists[1] if len(lists) > 1 else []
    return fuse(vector, keyword, limit=limit)


def rrf(vector: Sequence[SearchHit], keyword: Sequence[SearchHit], limit: int) -> list[SearchHit]:
    """Reciprocal rank fusion of the two lists, scores ignored."""
    return reciprocal_rank_fusion([vector, keyword], k=DEFAULT_RRF_K, limit=limit)


def minmax(
    vector: Sequence[SearchHit], keyword: Sequence[SearchHit], limit: int
) -> list[SearchHit]:
    """The two lists' scores min-max scaled to [0, 1], weighted and added."""
    scaled = [_minmax(_best_scores(vector)), _minmax(_best_scores(keyword))]
    return _ranked([vector, keyword], WEIGHTS, scaled, limit)


def zscore(
    vector: Sequence[SearchHit], keyword: Sequence[SearchHit], limit: int
) -> list[SearchHit]:
    """The two lists' scores standardized, weighted and added."""
    scaled = [_zscore(_best_scores(vector)), _zscore(_best_scores(keyword))]
    return _ranked([vector, keyword], WEIGHTS, scaled, limit)


def confident(
    vector: Sequence[SearchHit], keyword: Sequence[SearchHit], limit: int
) -> list[SearchHit]:
    """``minmax``, with the top hit of a list that leads by a wide margin put first."""
    # each list's best scores found once, for its scaling and its margin alike
    best = _best_scores(vector), _best_scores(keyword)
    scaled = [_minmax(best[0]), _minmax(best[1])]
    fused = _ranked([vector, keyword], WEIGHTS, scaled, max(limit, 1) + 1)
    leader = _confident_top(keyword, best[1], KEYWORD_MARGIN) or _confident_top(
        vector, best[0], VECTOR_MARGIN
    )
    if leader is not None:
        at = next((i for i, hit in enumerate(fused) if hit.chunk_id == leader), None)
        if at:
            top = fused[0].score
            fused.insert(0, fused.pop(at).rescored(top + 1.0))
    return fused[: max(limit, 0)]


FUSIONS: dict[str, Fusion] = {
    "rrf": rrf,
    "minmax": minmax,
    "zscore": zscore,
    "confident": confident,
}


def margin(hits: Sequence[SearchHit]) -> float:
    """How far the top hit leads the next distinct one, relative to the top score:
    ``(top - second) / |top|``; 1.0 for a single hit, 0.0 for none or a zero top."""
    return _margin(_best_scores(hits))


def _margin(best: dict[str, float]) -> float:
    """``margin`` of a list's best score per chunk, in list order."""
    if not best:
        return 0.0
    values = list(best.values())
    if len(values) == 1:
        return 1.0
    top, second = values[0], values[1]
    return (top - second) / abs(top) if top else 0.0


# ---- helpers ----------------------------------------------------------------------


def _best_scores(hits: Sequence[SearchHit]) -> dict[str, float]:
    scores: dict[str, float] = {}
    for hit in hits:
        scores.setdefault(hit.chunk_id, float(hit.score))
    return scores


def _minmax(scores: dict[str, float]) -> dict[str, float]:
    """A list's best scores per chunk, scaled to [0, 1]."""
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    span = high - low
    return {c: (s - low) / span if span > 0 else 1.0 for c, s in scores.items()}


def _zscore(scores: dict[str, float]) -> dict[str, float]:
    """A list's best scores per chunk, standardized and shifted to start at 0."""
    if not scores:
        return {}
    mean = sum(scores.values()) / len(scores)
    std = math.sqrt(sum((s - mean) ** 2 for s in scores.values()) / len(scores))
    z = {c: (s - mean) / std if std > 0 else 0.0 for c, s in scores.items()}
    low = min(z.values())
    # Shift so the lowest hit of the list scores 0, the value of an absent chunk.
    return {c: v - low for c, v in z.items()}


def _confident_top(
    hits: Sequence[SearchHit], best: dict[str, float], threshold: float
) -> str | None:
    """The list's top chunk when its margin over the runner-up reaches ``threshold``
    (``best``: the list's best score per chunk)."""
    if not hits or len(best) < 2 or _margin(best) < threshold:
        return None
    return hits[0].chunk_id


def _ranked(
    lists: Sequence[Sequence[SearchHit]],
    weights: Sequence[float],
    scores: Sequence[dict[str, float]],
    limit: int,
) -> list[SearchHit]:
    """Chunks by weighted sum of per-list scores; ties keep first-met order."""
    if limit <= 0:
        return []
    first: dict[str, SearchHit] = {}
    for hits in lists:
        for hit in hits:
            first.setdefault(hit.chunk_id, hit)
    if len(scores) == 2:  # hybrid's two lists: the sum below, without a generator a chunk
        (w0, w1), (s0, s1) = weights, scores
        total = {c: 0.0 + w0 * s0.get(c, 0.0) + w1 * s1.get(c, 0.0) for c in first}
    else:
        total = {
            c: sum(w * s.get(c, 0.0) for w, s in zip(weights, scores, strict=True)) for c in first
        }
    # best first; a stable sort keeps the first-met order of equal scores, reversed too
    best = sorted(total, key=total.__getitem__, reverse=True)
    return [first[chunk_id].rescored(total[chunk_id]) for chunk_id in best[:limit]]
