"""What the model is sent while a batch is indexed (issue 29 goal 2).

A batch's chunks go to the embedder sorted by length in full slices of ``EMBED_SLICE``
(so each of the model's calls pads little), each with the token ids the chunker counted
(so no chunk is tokenized twice), and their vectors come back in chunk order: each chunk
gets the vector of its own text, as if embedded alone.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from headwater import Workspace
from headwater.indexer import prepare
from headwater.indexer.prepare import EMBED_SLICE
from headwater.pipeline.embed.each import EmbedOutcome
from headwater.pipeline.embed.fake import FakeEmbedder
from headwater.pipeline.embed.tokens import TokenIds
from workspace_helpers import filesystem_source, write_config

DOCS = 8
PARAGRAPHS = 40


class TokenFake(FakeEmbedder):
    """A fake whose tokens are words: it gives their ids and takes them back, and records
    what each call was sent."""

    def __init__(self) -> None:
        super().__init__(32)
        self.sent: list[tuple[list[str], list[TokenIds | None]]] = []

    @staticmethod
    def ids(text: str) -> list[int]:
        return [zlib.crc32(word.encode()) % 30_000 for word in text.split()]

    def token_ids_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [self.ids(t) for t in texts]

    def embed_tokens(
        self, texts: Sequence[str], ids: Sequence[TokenIds | None]
    ) -> list[EmbedOutcome]:
        self.sent.append((list(texts), list(ids)))
        return self.embed_each(texts)


def _workspace(tmp_path: Path) -> Path:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for n in range(DOCS):
        paragraphs = [
            " ".join(f"d{n}p{i}w{w}" for w in range(2 + (7 * i + n) % 13))
            for i in range(PARAGRAPHS)
        ]
        (corpus / f"doc{n}.txt").write_text("\n\n".join(paragraphs) + "\n", encoding="utf-8")
    return write_config(
        tmp_path,
        manifest_url=None,
        sources=filesystem_source(corpus, access="{ public = true }"),
        extra="[chunker]\nmax_tokens = 24\n",
    )


def test_a_batch_is_sent_sorted_in_full_slices_with_its_ids_and_comes_back_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prepared: list[Any] = []
    original = prepare.Preparer.prepare

    def keep(self: prepare.Preparer, *args: Any, **kwargs: Any) -> Any:
        result = original(self, *args, **kwargs)
        prepared.append(result[0])
        return result

    monkeypatch.setattr(prepare.Preparer, "prepare", keep)
    fake = TokenFake()
    with Workspace.open(_workspace(tmp_path), embedder=fake) as ws:
        ws.sync(index=False)
        report = ws.index()
    chunks = report.chunks
    assert report.replaced == DOCS and chunks > 2 * EMBED_SLICE  # one batch, many slices
    # full slices: as few calls as the slice allows, each as large as it allows
    sizes = [len(texts) for texts, _ in fake.sent]
    assert sum(sizes) == chunks and len(sizes) == -(-chunks // EMBED_SLICE)
    assert all(size == EMBED_SLICE for size in sizes[:-1])
    # every text came with the chunker's ids (none tokenized again), sorted by length
    sent = [(t, i) for texts, ids in fake.sent for t, i in zip(texts, ids, strict=True)]
    assert all(ids == TokenFake.ids(text) for text, ids in sent)
    lengths = [len(ids or ()) for _, ids in sent]
    assert lengths == sorted(lengths) and lengths[0] < lengths[-1]
    # each chunk got its own text's vector, chunks in order within each document
    [batch] = prepared
    assert len(batch) == DOCS
    for document in batch.values():
        assert [c.chunk.ordinal for c in document.chunks] == list(range(len(document.chunks)))
        for embedded in document.chunks:
            assert np.allclose(embedded.vector, fake.vector(embedded.chunk.embed_text))


def test_an_embedder_without_ids_is_sent_texts_and_the_chunks_are_the_same(
    tmp_path: Path,
) -> None:
    with_ids, plain = TokenFake(), FakeEmbedder(32)
    found = []
    for embedder in (with_ids, plain):
        directory = tmp_path / type(embedder).__name__
        directory.mkdir()
        with Workspace.open(_workspace(directory), embedder=embedder) as ws:
            ws.sync()
            found.append(ws.search("d3p7w2", mode="keyword", k=50))
    assert with_ids.sent and plain.calls == -(-sum(len(t) for t, _ in with_ids.sent) // EMBED_SLICE)
    assert [(h["chunk_id"], h["text"]) for h in found[0]] == [
        (h["chunk_id"], h["text"]) for h in found[1]
    ]
