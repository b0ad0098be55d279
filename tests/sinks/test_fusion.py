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
