"""Token ids handed from the chunker to the embedder (``pipeline.embed.tokens``).

The chunker keeps the ids of each chunk's ``embed_text`` it counted, without changing a
chunk; the cache passes the misses' ids to a model that takes them, and asks no ids of
one that does not; the ONNX session adds the template's special tokens and truncates as
its tokenizer does. The session's own check (same vectors as from the texts) needs the
prepared model: ``test_embed_onnx.py``.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from pipeline_docs import long_document

from headwater.pipeline.chunk import ChunkerSettings, chunk_document
from headwater.pipeline.embed.cache import CachedEmbedder, EmbeddingCache
from headwater.pipeline.embed.each import EmbedOutcome
from headwater.pipeline.embed.fake import FakeEmbedder
from headwater.pipeline.embed.local import TokenizerCounter
from headwater.pipeline.embed.onnx import OnnxEmbedder
from headwater.pipeline.embed.tokens import TokenEmbedder, TokenIdCounter, TokenIds, embed_tokens


def _chunks(counter: object, ids: dict[str, list[int]] | None) -> list[object]:
    return chunk_document(  # type: ignore[return-value]
        document_id="d1",
        pipeline_version="p1",
        text="\n\n".join(long_document(random.Random(3), 40)),
        title="Handbook",
        metadata={"path": "handbook.md"},
        counter=counter,  # type: ignore[arg-type]
        settings=ChunkerSettings(max_tokens=96),
        token_ids=ids,
    )


def test_the_chunker_hands_on_the_ids_it_counted_and_cuts_the_same_chunks(
    tokenizer: TokenizerCounter,
) -> None:
    embedder = OnnxEmbedder()  # its tokenizer only: no session is loaded
    assert isinstance(embedder, TokenIdCounter) and isinstance(embedder, TokenEmbedder)
    ids: dict[str, list[int]] = {}
    chunks = _chunks(embedder, ids)
    assert chunks == _chunks(tokenizer, None) and len(chunks) > 5
    texts = [c.embed_text for c in chunks]  # type: ignore[attr-defined]
    assert set(ids) == set(texts)  # the ids of the chunks, none of the units counted
    assert [ids[t] for t in texts] == tokenizer.ids_batch(texts)
    assert [len(ids[t]) for t in texts] == tokenizer.count_tokens_batch(texts)
    assert not embedder.loaded


def test_a_counter_without_ids_leaves_them_out(tokenizer: TokenizerCounter) -> None:
    ids: dict[str, list[int]] = {}
    assert _chunks(tokenizer, ids) == _chunks(tokenizer, None) and ids == {}


class IdFake(FakeEmbedder):
    """A fake that takes ids (one per word) and records the ids it was sent."""

    def __init__(self) -> None:
        super().__init__(16)
        self.sent: list[list[TokenIds | None]] = []

    def token_ids_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [[len(word) for word in t.split()] for t in texts]

    def embed_tokens(
        self, texts: Sequence[str], ids: Sequence[TokenIds | None]
    ) -> list[EmbedOutcome]:
        self.sent.append(list(ids))
        return self.embed_each(texts)


def test_the_cache_sends_the_misses_ids_and_asks_none_of_a_model_without(
    tmp_path: Path,
) -> None:
    inner = IdFake()
    with EmbeddingCache(tmp_path / "a.db") as cache:
        cached = CachedEmbedder(inner, cache)
        assert cached.token_ids_batch(["ab cde"]) == [[2, 3]]
        first = embed_tokens(cached, ["one", "two words"], [[3], [3, 5]])
        again = embed_tokens(cached, ["two words", "three", "three"], [[3, 5], [5], [5]])
        assert inner.sent == [[[3], [3, 5]], [[5]]]  # hits not sent, a repeat sent once
        assert first[1] == again[0]  # through float32, hit or miss
        assert np.allclose(again[0], inner.vector("two words"))  # type: ignore[arg-type]
    plain = FakeEmbedder(16)
    with EmbeddingCache(tmp_path / "b.db") as cache:
        cached = CachedEmbedder(plain, cache)
        assert cached.token_ids_batch(["ab cde"]) is None  # the chunker counts instead
        assert np.allclose(embed_tokens(cached, ["one"], [[3]]), [plain.vector("one")])  # type: ignore[arg-type]
    assert embed_tokens(plain, ["one"], [[3]]) == [plain.vector("one")]  # texts only


def test_the_session_frames_and_truncates_plain_ids_as_its_tokenizer_does(
    tokenizer: TokenizerCounter,
) -> None:
    from tokenizers import Tokenizer

    from headwater.pipeline.embed.local import bundled_model_dir
    from headwater.pipeline.embed.onnx_session import _template, model_rows

    session_tokenizer = Tokenizer.from_file(str(bundled_model_dir() / "tokenizer.json"))
    session_tokenizer.enable_truncation(max_length=256)  # as OnnxSession sets it up
    session_tokenizer.no_padding()
    frame = _template(session_tokenizer)
    assert frame == ([101], [102])  # BERT's [CLS] text [SEP]
    rng = random.Random(5)
    texts = ["", "a short one", *long_document(rng, 12), " ".join(long_document(rng, 30))]
    assert len(tokenizer.ids_batch(texts[-1:])[0]) > 300  # one text is truncated
    expected = [e.ids for e in session_tokenizer.encode_batch(texts, add_special_tokens=True)]
    plain = tokenizer.ids_batch(texts)
    assert model_rows(session_tokenizer, frame, 256, texts, plain) == expected
    some = [None if n % 3 else ids for n, ids in enumerate(plain)]
    assert model_rows(session_tokenizer, frame, 256, texts, some) == expected
    assert model_rows(session_tokenizer, None, 256, texts, plain) == expected
