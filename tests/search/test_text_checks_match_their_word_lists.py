"""The per-hit text checks of a search scan for the query's words instead of listing every
word of every chunk; they must answer exactly what the word lists answer.

``phrase_first`` asks whether a chunk's words hold the query's words in a row, and
``answering`` whether a keyword hit holds an informative word of the query. Each is
compared here with the word-list definition it replaced, on generated text that mixes
ASCII, accents, case-folding pairs (``ß``/``SS``), underscores, digits and punctuation.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from headwater.search.fusion import PHRASE_MIN_WORDS, phrase_first
from headwater.search.terms import answering, informative_words, words
from headwater.types import SearchHit

# Small alphabets, so generated queries and texts share words often enough to matter.
_LETTERS = "abcAB_1 ßSsÉéè-.,'\u0301\n"
_WORDS = ["alpha", "beta", "Gamma", "straße", "STRASSE", "café", "cafe", "x_y", "42", "the"]
_texts = st.lists(
    st.one_of(st.sampled_from(_WORDS), st.text(_LETTERS, max_size=6)), max_size=12
).map(lambda parts: " ".join(parts))


def _hit(n: int, text: str, title: str = "") -> SearchHit:
    return SearchHit(f"c{n}", f"d{n}", 0, 1.0 / (n + 1), text, title, f"/l/{n}", "s")


def _holds_phrase(query: str, text: str) -> bool:
    """The definition: the chunk's words, joined by spaces, contain the query's."""
    phrase = " ".join(re.findall(r"\w+", query.casefold()))
    held = " ".join(re.findall(r"\w+", text.casefold()))
    return f" {phrase} " in f" {held} "


@settings(max_examples=400, deadline=None)
@given(query=_texts, texts=st.lists(_texts, min_size=1, max_size=6))
def test_phrase_first_moves_exactly_the_chunks_whose_words_hold_the_phrase(
    query: str, texts: list[str]
) -> None:
    hits = [_hit(n, text) for n, text in enumerate(texts)]
    moved = [h.chunk_id for h in phrase_first(query, hits)]
    if len(re.findall(r"\w+", query.casefold())) < PHRASE_MIN_WORDS:
        assert moved == [h.chunk_id for h in hits]
        return
    holding = [h.chunk_id for h in hits if _holds_phrase(query, h.text)]
    rest = [h.chunk_id for h in hits if not _holds_phrase(query, h.text)]
    assert moved == holding + rest


def test_a_phrase_inside_longer_words_or_split_by_another_word_is_not_held() -> None:
    hits = [
        _hit(0, "the working treehouse compares"),  # a longer word at the end
        _hit(1, "networking tree compares"),  # a longer word at the start
        _hit(2, "working big tree compares"),  # a word between
        _hit(3, "Working -- TREE, (compares)!"),  # case and punctuation between: held
        _hit(4, "workingtree compares"),  # two of its words run together
        _hit(5, "working tree compares_them"),  # a longer word at the end of the phrase
    ]
    moved = phrase_first("working tree compares", hits)
    assert [h.chunk_id for h in moved] == ["c3", "c0", "c1", "c2", "c4", "c5"]


@settings(max_examples=400, deadline=None)
@given(
    query=_texts,
    pairs=st.lists(st.tuples(_texts, _texts), min_size=1, max_size=6),
)
def test_answering_keeps_exactly_the_hits_whose_words_share_an_informative_one(
    query: str, pairs: list[tuple[str, str]]
) -> None:
    hits = [_hit(n, text, title) for n, (text, title) in enumerate(pairs)]
    wanted = informative_words(query)
    expected = [
        h for h in hits if not wanted or not wanted.isdisjoint(words(f"{h.text} {h.title}"))
    ]
    assert answering(query, hits) == expected


def test_answering_needs_a_whole_word_not_a_piece_of_one() -> None:
    hits = [_hit(0, "indexing_tree"), _hit(1, "reindex the tree"), _hit(2, "an Index, here")]
    assert [h.chunk_id for h in answering("how to index", hits)] == ["c2"]
