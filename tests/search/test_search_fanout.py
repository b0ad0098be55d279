"""Search fans out over every configured index serving the mode and fuses in search/.

A qdrant index (vectors only) and a keyword-only sqlite index: hybrid asks the first for
vectors and the second for keywords and fuses them by reciprocal rank; ``index=`` asks
one index only. The sqlite sink is subclassed only to serve keywords alone (its real
capabilities are both) and both sinks record what they were asked.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

import pytest

from headwater import Workspace
from headwater.errors import ConfigError
from headwater.pipeline.embed.fake import FakeEmbedder
from headwater.sinks.base import SearchRequest, SinkCapabilities, WriteOutcome
from headwater.sinks.qdrant import QdrantSink
from headwater.sinks.sqlite import SqliteSink
from headwater.types import EmbeddedChunk, IndexDocument, SearchHit, SearchMode
from workspace_helpers import filesystem_source, write_config

ASKED: list[tuple[str, SearchMode]] = []


class VectorQdrant(QdrantSink):
    def search(self, request: SearchRequest) -> list[SearchHit]:
        ASKED.append(("qdrant", request.mode))
        return super().search(request)


class KeywordSqlite(SqliteSink):
    """The sqlite sink serving keywords only; the indexer sends it chunks without
    vectors, so it stores a placeholder one (never searched) in its vector table."""

    capabilities: ClassVar[SinkCapabilities] = SinkCapabilities(vector=False, keyword=True)

    def replace(
        self, document: IndexDocument, chunks: Sequence[EmbeddedChunk], revision: int
    ) -> WriteOutcome:
        placeholder = [1.0] + [0.0] * (self.context.dimension - 1)
        stored = [EmbeddedChunk(chunk=c.chunk, vector=c.vector or placeholder) for c in chunks]
        return super().replace(document, stored, revision)

    def search(self, request: SearchRequest) -> list[SearchHit]:
        ASKED.append(("sqlite", request.mode))
        return super().search(request)


INDEXES = (
    '[[index]]\nname = "vectors"\ntype = "vector_qdrant"\nlocation = ":memory:"\n\n'
    '[[index]]\nname = "words"\ntype = "keyword_sqlite"\n'
)


@pytest.fixture
def ws(tmp_path: Path, corpus: Path) -> Workspace:
    config = write_config(
        tmp_path,
        manifest_url=None,
        sources=filesystem_source(corpus, access="{ public = true }"),
        indexes=INDEXES,
    )
    sink_types = {"vector_qdrant": VectorQdrant, "keyword_sqlite": KeywordSqlite}
    workspace = Workspace.open(config, embedder=FakeEmbedder(32), sink_types=sink_types)
    workspace.sync()
    ASKED.clear()
    return workspace


def test_hybrid_takes_vectors_from_one_index_and_keywords_from_another(ws: Workspace) -> None:
    with ws:
        assert not ws.sink("vectors").capabilities.keyword
        assert not ws.sink("words").capabilities.vector
        found = ws.search("reimbursement", k=5)
        assert sorted(ASKED) == [("qdrant", SearchMode.VECTOR), ("sqlite", SearchMode.KEYWORD)]
        # Only the expenses guide holds the word: it leads the fused ranking, whose
        # scores are one fused order.
        assert found[0].locator.endswith("expenses.md")
        scores = [r.score for r in found]
        assert scores == sorted(scores, reverse=True)
        # The vector list reaches the documents without the word, all but its lowest,
        # which only filled k: its fused score was 0 (search.service.signal_only).
        assert len(found) == 4


def test_index_restricts_the_search_to_one_index(ws: Workspace) -> None:
    with ws:
        words = ws.search("reimbursement", k=5, index="words")
        assert ASKED == [("sqlite", SearchMode.KEYWORD)]
        assert [r.locator.rsplit("/", 1)[-1] for r in words] == ["expenses.md"]
        ASKED.clear()
        vectors = ws.search("reimbursement", k=5, index="vectors")  # hybrid is vector here
        assert ASKED == [("qdrant", SearchMode.VECTOR)]
        assert len(vectors) == 5
        with pytest.raises(ConfigError, match="no keyword search"):
            ws.search("reimbursement", mode="keyword", index="vectors")


def test_plain_modes_ask_only_the_indexes_serving_them(ws: Workspace) -> None:
    with ws:
        ws.search("reimbursement", mode="keyword")
        assert ASKED == [("sqlite", SearchMode.KEYWORD)]
        ASKED.clear()
        ws.search("reimbursement", mode="vector")
        assert ASKED == [("qdrant", SearchMode.VECTOR)]
