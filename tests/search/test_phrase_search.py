"""Hybrid search puts the document that holds the query as a phrase first.

Through the workspace, as ``headwater search`` runs it: one ``sqlite`` index answering
both modes, fused in ``search/``. The page with the sentence verbatim is out-scored on
keywords by a page that repeats its words out of order, so only the phrase rule ranks it
first (``bench/retrieval``'s ``sentence`` queries, docs/performance.md).
"""

from __future__ import annotations

from pathlib import Path

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
