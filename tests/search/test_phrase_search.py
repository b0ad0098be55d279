"""Hybrid search puts the document that holds the query as a phrase first.

Through the workspace, as ``headwater search`` runs it: one ``sqlite`` index answering
both modes, fused in ``search/``. The page with the sentence verbatim is out-scored on
keywords by a page that repeats its words out of order, so only the phrase rule ranks it
first (``bench/retrieval``'s ``sentence`` queries, docs/performance.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from headwater import Workspace
from headwater.pipeline.embed.fake import FakeEmbedder
from workspace_helpers import filesystem_source, write_config

SENTENCE = "Compares the files in the working tree and the index"


def test_hybrid_search_ranks_the_page_holding_the_sentence_first(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "diff-files.md").write_text(
        f"# git-diff-files\n\n{SENTENCE}. It shows changes not yet staged.\n", encoding="utf-8"
    )
    (docs / "diff-index.md").write_text(
        "# git-diff-index\n\n"
        + "Index and tree: the working tree compares files in the index; files, tree, index. " * 3
        + "\n",
        encoding="utf-8",
    )
    for n in range(6):  # background pages, so bm25 has document frequencies to work with
        (docs / f"other-{n}.md").write_text(f"# other {n}\n\nUnrelated page number {n}.\n")
    config = write_config(
        tmp_path, manifest_url=None, sources=filesystem_source(docs, access="{ public = true }")
    )
    with Workspace.open(config, embedder=FakeEmbedder(32)) as ws:
        ws.sync()
        keyword = ws.search(SENTENCE, mode="keyword")
        hybrid = ws.search(SENTENCE, mode="hybrid")
        short = ws.search("index tree", mode="hybrid")
    assert keyword[0].title == "git-diff-index"  # keywords alone prefer the repeats
    assert hybrid[0].title == "git-diff-files"
    assert short[0].title == "git-diff-index"  # two words: no phrase rule


@pytest.mark.parametrize("seed", range(200))
def test_phrase_first_moves_exactly_the_hits_holding_the_phrase(seed: int) -> None:
    """Against the definition: the query's words, adjacent among the text's words (case
    and punctuation aside), moved first in their own order, the rest after in theirs."""
    import random
    import re

    from headwater.search.fusion import phrase_first
    from headwater.types import SearchHit

    rng = random.Random(seed)
    vocab = ["log", "logs", "rotate", "rotated", "the", "files", "Files", "catalog"]
    query = " ".join(rng.choice(vocab) for _ in range(rng.randint(1, 4)))
    hits = [
        SearchHit(f"c{n}", "d", n, 1.0 - n / 100, " ".join(
            rng.choice([*vocab, ",", "-", "x"]) for _ in range(rng.randint(0, 12))), "", "", "s")
        for n in range(rng.randint(0, 30))
    ]  # fmt: skip
    phrase = re.findall(r"\w+", query.casefold())

    def holds(text: str) -> bool:
        words = re.findall(r"\w+", text.casefold())
        return " " + " ".join(phrase) + " " in " " + " ".join(words) + " "

    moved = [h.chunk_id for h in hits if holds(h.text)] if len(phrase) >= 3 else []
    got = [h.chunk_id for h in phrase_first(query, hits)]
    assert got == moved + [h.chunk_id for h in hits if h.chunk_id not in moved]
