"""The bundled model: lazy loading, exact token counts, real embeddings."""

from __future__ import annotations

import subprocess
import sys

import pytest

from headwater.pipeline.chunk import ChunkerSettings, chunk_document
from headwater.pipeline.embed import LOCAL_MODEL_ID, LocalEmbedder


def test_constructing_and_counting_loads_no_torch() -> None:
    probe = (
        "import sys\n"
        "from headwater.pipeline.embed import LocalEmbedder\n"
        "e = LocalEmbedder()\n"
        "assert e.count_tokens('Hello, tokenizer world!') == 6\n"
        "assert e.count_tokens_batch(['a b', '']) == [2, 0]\n"
        "assert (e.dimension, e.max_tokens) == (384, 254)\n"
        "assert 'torch' not in sys.modules and not e.loaded\n"
    )
    subprocess.run([sys.executable, "-c", probe], check=True)


def test_counts_exclude_special_tokens_and_never_truncate() -> None:
    embedder = LocalEmbedder()
    assert embedder.count_tokens("word " * 1000) == 1000
    assert embedder.model_id == LOCAL_MODEL_ID


@pytest.mark.model
def test_real_embeddings_rank_similar_texts_closer() -> None:
    embedder = LocalEmbedder(batch_size=8)
    vectors = embedder.embed(
        [
            "How do I reset my password?",
            "Steps to change a forgotten account password",
            "The recipe needs two cups of flour and an egg.",
        ]
    )
    assert embedder.loaded and all(len(v) == 384 for v in vectors)
    assert all(abs(sum(x * x for x in v) - 1.0) < 1e-4 for v in vectors)

    def cosine(a: list[float], b: list[float]) -> float:
        return sum(x * y for x, y in zip(a, b, strict=True))

    assert cosine(vectors[0], vectors[1]) > cosine(vectors[0], vectors[2]) + 0.3
    assert embedder.embed_each(["How do I reset my password?"])[0] == pytest.approx(
        vectors[0], abs=1e-5
    )


@pytest.mark.model
def test_chunks_of_a_long_document_embed_within_the_model_limit() -> None:
    embedder = LocalEmbedder()
    text = "\n\n".join(f"Paragraph {i}. " + "Streams feed the river. " * 30 for i in range(20))
    chunks = chunk_document(
        document_id="d",
        pipeline_version="v",
        text=text,
        title="Rivers",
        metadata={},
        counter=embedder,
        settings=ChunkerSettings().fitted(embedder.max_tokens),
    )
    assert max(embedder.count_tokens_batch([c.embed_text for c in chunks])) <= 254
    assert len(embedder.embed([c.embed_text for c in chunks])) == len(chunks)
