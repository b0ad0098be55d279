"""Reciprocal rank fusion: ranks add up, duplicates merge, ties stay in first-seen order."""

from __future__ import annotations

import pytest

from headwater.search.fusion import reciprocal_rank_fusion
from headwater.types import SearchHit


def hit(chunk_id: str, score: float = 0.5) -> SearchHit:
    return SearchHit(
        chunk_id=chunk_id,
        document_id=f"doc-{chunk_id}",
        ordinal=0,
        score=score,
        text=f"text {chunk_id}",
        title="t",
        locator="l",
        source="s",
    )


def test_scores_are_sums_of_reciprocal_ranks() -> None:
    fused = reciprocal_rank_fusion([[hit("a"), hit("b")], [hit("b"), hit("c")]], k=60, limit=10)
    assert [h.chunk_id for h in fused] == ["b", "a", "c"]
    assert fused[0].score == pytest.approx(1 / 62 + 1 / 61)
    assert fused[1].score == pytest.approx(1 / 61)
    assert fused[2].score == pytest.approx(1 / 62)


def test_limit_and_empty_inputs() -> None:
    lists = [[hit(c) for c in "abcdef"]]
    assert [h.chunk_id for h in reciprocal_rank_fusion(lists, k=60, limit=3)] == ["a", "b", "c"]
    assert reciprocal_rank_fusion([], k=60, limit=5) == []
    assert reciprocal_rank_fusion([[], []], k=60, limit=5) == []
    assert reciprocal_rank_fusion(lists, k=60, limit=0) == []


def test_ties_keep_first_seen_order_and_first_hit_fields() -> None:
    fused = reciprocal_rank_fusion([[hit("x", 0.9)], [hit("y", 7.0)]], k=60, limit=5)
    assert [h.chunk_id for h in fused] == ["x", "y"]
    assert fused[0].text == "text x" and fused[0].document_id == "doc-x"


def test_a_repeat_inside_one_list_counts_once() -> None:
    fused = reciprocal_rank_fusion([[hit("a"), hit("a"), hit("b")]], k=0, limit=5)
    assert fused[0].score == pytest.approx(1.0)
    assert fused[1].score == pytest.approx(1 / 3)


def test_negative_k_is_refused() -> None:
    with pytest.raises(ValueError, match="k >= 0"):
        reciprocal_rank_fusion([[hit("a")]], k=-1, limit=5)


def test_a_rescored_hit_is_the_hit_with_only_its_score_changed() -> None:
    """``SearchHit.rescored`` (fusion's fast copy) equals ``dataclasses.replace``: every
    field carried over, a field added later included (it would not construct)."""
    from dataclasses import fields, replace

    hit = SearchHit(
        chunk_id="c", document_id="d", ordinal=3, score=0.5, text="t", title="T",
        locator="l", source="s",
    )  # fmt: skip
    assert hit.rescored(2.5) == replace(hit, score=2.5)
    assert {f.name for f in fields(SearchHit)} == set(vars(hit.rescored(1.0)))


def _reference_ranked(lists, weights, scores, limit):  # type: ignore[no-untyped-def]
    """``fusion._ranked`` as first written: weighted sums, best first, ties by first met."""
    first: dict[str, SearchHit] = {}
    for hits in lists:
        for found in hits:
            first.setdefault(found.chunk_id, found)
    total = {c: sum(w * s.get(c, 0.0) for w, s in zip(weights, scores, strict=True)) for c in first}
    order = {c: n for n, c in enumerate(first)}
    best = sorted(total, key=lambda c: (-total[c], order[c]))
    return [(c, total[c]) for c in best[:limit]]


@pytest.mark.parametrize("seed", range(200))
def test_every_method_ranks_as_the_weighted_sum_with_ties_in_first_met_order(seed: int) -> None:
    """Random lists sharing chunks, with many equal scores: each score-based method's
    ranking and fused scores equal the plain weighted sum's, ties kept in first-met order."""
    import random

    from headwater.search import fusion

    rng = random.Random(seed)
    pool = [f"c{n}" for n in range(rng.randint(1, 40))]
    vector, keyword = (
        [hit(c, rng.choice([0.0, 0.25, 0.5, 1.0, rng.random()]))
         for c in rng.sample(pool, rng.randint(0, len(pool)))]
        for _ in range(2)
    )  # fmt: skip
    vector.sort(key=lambda h: -h.score)
    keyword.sort(key=lambda h: -h.score)
    weights = [1.0 - fusion.KEYWORD_WEIGHT, fusion.KEYWORD_WEIGHT]
    limit = rng.randint(0, 50)
    for scale in (fusion._minmax, fusion._zscore):
        scores = [scale(fusion._best_scores(vector)), scale(fusion._best_scores(keyword))]
        got = fusion._ranked([vector, keyword], weights, scores, limit)
        expected = _reference_ranked([vector, keyword], weights, scores, limit)
        assert [(h.chunk_id, h.score) for h in got] == expected
    lists = [vector, keyword, vector[::-1]]
    three = [fusion._minmax(fusion._best_scores(x)) for x in lists]
    got = fusion._ranked(lists, [0.2, 0.3, 0.5], three, limit)
    assert [(h.chunk_id, h.score) for h in got] == _reference_ranked(
        lists, [0.2, 0.3, 0.5], three, limit
    )
