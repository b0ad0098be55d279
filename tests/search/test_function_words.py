"""A keyword hit must share an informative word with the query (search/terms.py).

On a small corpus "how", "much", "do" and "get" keep a real idf, so a page holding only
those words topped the keyword list of "how much holiday do employees get" with a wide
lead, and hybrid fusion trusted it over the page about holidays.
"""

from __future__ import annotations

from pathlib import Path

from headwater import Workspace
from headwater.search.terms import answering, informative_words
from headwater.types import SearchHit
from workspace_helpers import filesystem_source, write_config


def hit(chunk_id: str, text: str, title: str = "") -> SearchHit:
    return SearchHit(chunk_id, f"doc-{chunk_id}", 0, 1.0, text, title, "loc", "src")


def test_hits_sharing_only_function_words_with_the_query_are_dropped() -> None:
    hits = [
        hit("a", "How much do you get? As much as you like, how you do it."),
        hit("b", "The holiday allowance is 25 days."),
        hit("c", "Nothing but the title matches", title="Holiday calendar"),
        hit("d", "Les congés des employés"),
    ]
    kept = answering("How much holiday do EMPLOYÉS get?", hits)
    assert [h.chunk_id for h in kept] == ["b", "c", "d"]


def test_a_query_of_function_words_only_keeps_every_hit() -> None:
    hits = [hit("a", "to be or not to be"), hit("b", "that is the question")]
    assert informative_words("To be, or not to be?") == set()
    assert answering("To be, or not to be?", hits) == hits


def test_a_keyword_search_for_a_question_skips_the_page_full_of_its_function_words(
    tmp_path: Path,
) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "chatter.txt").write_text(
        "How much do you get? How much do they get? Much of it is how you do it, and what "
        "you get is how much you do.\n"
    )
    (corpus / "leave.txt").write_text("Every employee has 25 holiday days a year.\n")
    for n in range(4):
        (corpus / f"other{n}.txt").write_text(f"Release notes number {n} for the build server.\n")
    config = write_config(
        tmp_path, manifest_url=None, sources=filesystem_source(corpus, access="{ public = true }")
    )
    question = "how much holiday do employees get"
    with Workspace.open(config) as ws:
        ws.sync()
        keyword = ws.search(question, user="a@x.com", mode="keyword")
        assert [h["title"] for h in keyword] == ["leave.txt"]
        # The fake embedder is a bag of words, so its vectors still favour the chatter:
        # only the keyword list is asserted here (docs/performance.md has the real model).
