"""Hybrid fusion never ranks below the better of its two parts, and each method's properties.

The labelled set is synthetic but shaped like the man-page benchmark (bench/retrieval):
in ``keyword`` cases the query is an exact phrase: the keyword list has the answer first
with a bm25 score far above the rest, while the vector list has it a few places down
behind a near-duplicate page that keyword also ranks second. In ``vector`` cases the query
is a paraphrase: the keyword list is a flat run of partial matches without the answer, and
the vector list has the answer clearly first. Plain reciprocal rank fusion fails both
kinds (it rewards the page that sits high in *both* lists), which the last quality test
proves, so the guard bites.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from headwater.search.fusion import (
    DEFAULT_FUSION,
    FUSIONS,
    fuse,
    hybrid_fusion,
    margin,
    reciprocal_rank_fusion,
)
from headwater.types import SearchHit

CASES_PER_KIND = 16


def hit(chunk_id: str, score: float, document_id: str | None = None) -> SearchHit:
    return SearchHit(
        chunk_id=chunk_id,
        document_id=document_id or f"doc-{chunk_id}",
        ordinal=0,
        score=score,
        text=f"text {chunk_id}",
        title=chunk_id,
        locator=chunk_id,
        source="s",
    )


@dataclass(frozen=True)
class Case:
    kind: str
    answer: str
    vector: list[SearchHit]
    keyword: list[SearchHit]


def _keyword_case(rng: random.Random, n: int) -> Case:
    answer, twin = f"k{n}-answer", f"k{n}-twin"
    others = [f"k{n}-o{i}" for i in range(8)]
    low = rng.uniform(2.0, 4.0)
    keyword = [hit(answer, low * rng.uniform(2.2, 4.0)), hit(twin, low)]
    keyword += [hit(o, low * (0.95 - 0.05 * i)) for i, o in enumerate(others[:5])]
    top = rng.uniform(0.55, 0.75)
    vector = [hit(twin, top)] + [hit(o, top - 0.01 * (i + 1)) for i, o in enumerate(others[5:])]
    vector.insert(rng.randint(2, 4), hit(answer, top - 0.035))
    return Case("keyword", answer, vector, keyword)


def _vector_case(rng: random.Random, n: int) -> Case:
    answer = f"v{n}-answer"
    others = [f"v{n}-o{i}" for i in range(8)]
    top = rng.uniform(0.6, 0.8)
    vector = [hit(answer, top)] + [
        hit(o, top * rng.uniform(0.7, 0.8) - 0.01 * i) for i, o in enumerate(others[:6])
    ]
    bm25 = rng.uniform(3.0, 6.0)
    keyword = [hit(o, bm25 * (1 - 0.03 * i)) for i, o in enumerate(others[2:8])]
    return Case("vector", answer, vector, keyword)


def labelled_set() -> list[Case]:
    rng = random.Random(15)
    cases = [_keyword_case(rng, n) for n in range(CASES_PER_KIND)]
    return cases + [_vector_case(rng, n) for n in range(CASES_PER_KIND)]


def _rank(hits: Sequence[SearchHit], answer: str) -> int | None:
    ids = [h.chunk_id for h in hits]
    return ids.index(answer) + 1 if answer in ids else None


def _quality(ranks: list[int | None]) -> tuple[float, float]:
    """(top-1 accuracy, MRR) over the ranks."""
    top1 = sum(1 for r in ranks if r == 1) / len(ranks)
    mrr = sum(1.0 / r for r in ranks if r is not None) / len(ranks)
    return top1, mrr


def _by_kind(method: str) -> dict[str, dict[str, tuple[float, float]]]:
    found: dict[str, dict[str, list[int | None]]] = {}
    for case in labelled_set():
        per = found.setdefault(case.kind, {"vector": [], "keyword": [], "fused": []})
        per["vector"].append(_rank(case.vector, case.answer))
        per["keyword"].append(_rank(case.keyword, case.answer))
        fused = fuse(case.vector, case.keyword, limit=10, method=method)
        per["fused"].append(_rank(fused, case.answer))
    return {kind: {m: _quality(r) for m, r in per.items()} for kind, per in found.items()}


@pytest.mark.parametrize("kind", ["keyword", "vector"])
def test_default_fusion_is_never_below_the_better_part(kind: str) -> None:
    quality = _by_kind(DEFAULT_FUSION)[kind]
    for measure in (0, 1):  # top-1 accuracy, then MRR
        better = max(quality["vector"][measure], quality["keyword"][measure])
        assert quality["fused"][measure] >= better, (kind, measure, quality)


def test_the_labelled_set_separates_the_parts() -> None:
    quality = _by_kind(DEFAULT_FUSION)
    assert quality["keyword"]["keyword"][0] == 1.0 > quality["keyword"]["vector"][0]
    assert quality["vector"]["vector"][0] == 1.0 > quality["vector"]["keyword"][0]


def test_plain_rrf_fails_the_guard_so_the_guard_bites() -> None:
    quality = _by_kind("rrf")
    for kind in ("keyword", "vector"):
        better = max(quality[kind]["vector"][0], quality[kind]["keyword"][0])
        assert quality[kind]["fused"][0] < better, (kind, quality[kind])


# ---- properties of every method ------------------------------------------------------


@pytest.mark.parametrize("method", sorted(FUSIONS))
def test_deterministic_and_pure(method: str) -> None:
    case = labelled_set()[3]
    vector, keyword = list(case.vector), list(case.keyword)
    first = fuse(vector, keyword, limit=10, method=method)
    assert first == fuse(vector, keyword, limit=10, method=method)
    assert vector == case.vector and keyword == case.keyword


@pytest.mark.parametrize("method", sorted(FUSIONS))
def test_empty_lists_and_limits(method: str) -> None:
    assert fuse([], [], limit=5, method=method) == []
    assert fuse([hit("a", 0.9)], [hit("b", 3.0)], limit=0, method=method) == []
    assert len(fuse([hit("a", 0.9), hit("b", 0.8)], [hit("c", 3.0)], limit=2, method=method)) == 2


@pytest.mark.parametrize("method", sorted(FUSIONS))
def test_one_list_empty_keeps_the_other_lists_order(method: str) -> None:
    hits = [hit("a", 0.9), hit("b", 0.7), hit("c", 0.2)]
    assert [h.chunk_id for h in fuse(hits, [], limit=10, method=method)] == ["a", "b", "c"]
    bm25 = [hit("x", 9.0), hit("y", 8.5), hit("z", 1.0)]
    assert [h.chunk_id for h in fuse([], bm25, limit=10, method=method)] == ["x", "y", "z"]


@pytest.mark.parametrize("method", sorted(FUSIONS))
def test_ties_keep_first_met_order_vector_first(method: str) -> None:
    vector, keyword = [hit("a", 0.5), hit("b", 0.5)], [hit("c", 2.0), hit("d", 2.0)]
    fused = [h.chunk_id for h in fuse(vector, keyword, limit=10, method=method)]
    # rrf: a and c tie at rank 1, b and d at rank 2, so first-met order decides each pair.
    # Score methods: equal scores in one list tie, and list order decides.
    if method == "rrf":
        assert fused == ["a", "c", "b", "d"]
    assert fused.index("a") < fused.index("b") and fused.index("c") < fused.index("d")
    assert sorted(fused) == ["a", "b", "c", "d"]


@pytest.mark.parametrize("method", sorted(FUSIONS))
def test_a_chunk_in_both_lists_appears_once_and_leads(method: str) -> None:
    vector = [hit("both", 0.8), hit("v", 0.7)]
    keyword = [hit("k", 5.0), hit("both", 4.9), hit("k2", 1.0)]
    fused = fuse(vector, keyword, limit=10, method=method)
    ids = [h.chunk_id for h in fused]
    assert sorted(ids) == ["both", "k", "k2", "v"]
    assert ids[0] == "both"
    assert [h.score for h in fused] == sorted((h.score for h in fused), reverse=True)


@pytest.mark.parametrize("method", sorted(FUSIONS))
def test_a_chunk_repeated_in_one_list_counts_at_its_best_place(method: str) -> None:
    fused = fuse([hit("a", 0.9), hit("a", 0.1), hit("b", 0.5)], [], limit=10, method=method)
    assert [h.chunk_id for h in fused] == ["a", "b"]


def test_confident_keyword_top_goes_first_and_flat_keyword_does_not() -> None:
    vector = [hit("v1", 0.70), hit("v2", 0.69), hit("x", 0.60)]
    sure = [hit("k1", 12.0), hit("v1", 8.0), hit("x", 1.0)]
    # Score fusion alone prefers v1 (high in both lists); the margin rule trusts keyword.
    assert fuse(vector, sure, limit=3, method="minmax")[0].chunk_id == "v1"
    assert fuse(vector, sure, limit=3, method="confident")[0].chunk_id == "k1"
    flat = [hit("k1", 3.1), hit("v1", 3.0), hit("x", 2.9)]
    assert margin(flat) < 0.25 <= margin(sure)
    assert fuse(vector, flat, limit=3, method="confident")[0].chunk_id == "v1"


def test_confident_vector_top_goes_first_when_keyword_is_flat() -> None:
    vector = [hit("v1", 0.80), hit("k1", 0.60), hit("x", 0.50)]
    keyword = [hit("k1", 5.0), hit("y", 4.9), hit("z", 1.0)]
    assert fuse(vector, keyword, limit=3, method="minmax")[0].chunk_id == "k1"
    assert fuse(vector, keyword, limit=3, method="confident")[0].chunk_id == "v1"
    fused = fuse(vector, keyword, limit=3, method="confident")
    assert [h.score for h in fused] == sorted((h.score for h in fused), reverse=True)


def test_margin_edges() -> None:
    assert margin([]) == 0.0
    assert margin([hit("a", 2.0)]) == 1.0
    assert margin([hit("a", 0.0), hit("b", 0.0)]) == 0.0
    assert margin([hit("a", 4.0), hit("b", 3.0)]) == pytest.approx(0.25)


def test_unknown_method_names_the_choices() -> None:
    with pytest.raises(ValueError, match=r"'best'.*rrf"):
        fuse([], [], limit=3, method="best")


def test_hybrid_fusion_is_a_drop_in_for_the_rrf_signature() -> None:
    vector, keyword = [hit("a", 0.9), hit("b", 0.5)], [hit("b", 7.0), hit("c", 1.0)]
    assert hybrid_fusion([vector, keyword], limit=3) == fuse(vector, keyword, limit=3)
    assert hybrid_fusion([vector], limit=3) == fuse(vector, [], limit=3)
    assert hybrid_fusion([], limit=3) == []
    with pytest.raises(ValueError, match="expected \\[vector, keyword\\]"):
        hybrid_fusion([vector, keyword, vector], limit=3)
    assert reciprocal_rank_fusion([vector, keyword], limit=3) == fuse(
        vector, keyword, limit=3, method="rrf"
    )


def text_hit(chunk_id: str, score: float, text: str) -> SearchHit:
    return SearchHit(chunk_id, f"doc-{chunk_id}", 0, score, text, chunk_id, chunk_id, "s")


def test_a_chunk_holding_the_query_as_a_phrase_goes_first() -> None:
    # Keyword is sure of "b" (it repeats the words), vector of "c"; only "a" holds the
    # words in order. Case, punctuation and line breaks do not matter.
    a = text_hit("a", 3.0, "To undo it, Run the\nfetch-pack command, then push.")
    b = text_hit("b", 9.0, "run run the the fetch fetch pack pack command command")
    c = text_hit("c", 0.9, "a paraphrase about fetching")
    vector, keyword = [c, b], [b, a]
    query = "run the fetch pack command"
    assert fuse(vector, keyword, limit=3)[0].chunk_id != "a"
    fused = fuse(vector, keyword, limit=3, query=query)
    assert [h.chunk_id for h in fused] == [
        "a",
        *(h.chunk_id for h in fuse(vector, keyword, limit=3) if h.chunk_id != "a"),
    ]
    assert [h.chunk_id for h in fuse(vector, keyword, limit=1, query=query)] == ["a"]
    scores = [h.score for h in fused]
    assert scores == sorted(scores, reverse=True) and scores[0] > scores[1]  # rank order
    # Not a phrase: words out of order, or a query under three words.
    assert fuse(vector, keyword, limit=3, query="command pack fetch the run") == fuse(
        vector, keyword, limit=3
    )
    assert fuse(vector, keyword, limit=3, query="fetch pack") == fuse(vector, keyword, limit=3)
    # A word of the phrase inside a longer word does not count ("run" in "rerun").
    rerun = text_hit("a", 3.0, "rerun the fetch pack command")
    assert fuse([c, b], [b, rerun], limit=3, query=query)[0].chunk_id != "a"
