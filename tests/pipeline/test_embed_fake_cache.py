"""The fake embedder, the embedding cache and per-text outcomes."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from headwater.errors import ConfigError, ItemError
from headwater.pipeline.embed import (
    CachedEmbedder,
    Embedder,
    EmbeddingCache,
    FakeEmbedder,
    LocalEmbedder,
    OpenAIEmbedder,
    PerTextEmbedder,
    build_embedder,
    cache_key,
    embed_each,
)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_fake_vectors_are_deterministic_unit_vectors() -> None:
    embedder = FakeEmbedder(dimension=32)
    first, second, empty = embedder.embed(["hello river", "hello river", ""])
    assert first == second and len(first) == 32
    assert math.isclose(sum(x * x for x in first), 1.0, rel_tol=1e-9)
    assert math.isclose(sum(x * x for x in empty), 1.0, rel_tol=1e-9)
    assert FakeEmbedder(dimension=32).embed(["hello river"])[0] == first


def test_fake_vectors_of_texts_sharing_words_are_closer() -> None:
    embedder = FakeEmbedder(dimension=256)
    base, near, far = embedder.embed(
        [
            "the river flows past the old stone mill",
            "the old stone mill by the river",
            "quarterly revenue grew in every region",
        ]
    )
    assert cosine(base, near) > cosine(base, far)


def test_fake_counts_whitespace_tokens_and_injects_failures() -> None:
    embedder = FakeEmbedder(fail_when=lambda text: "poison" in text)
    assert embedder.count_tokens("a b  c\nd") == 4
    outcomes = embedder.embed_each(["fine", "poison pill", "also fine"])
    assert isinstance(outcomes[1], ItemError) and outcomes[1].error_class == "embed_error"
    assert not isinstance(outcomes[0], ItemError) and not isinstance(outcomes[2], ItemError)
    with pytest.raises(ItemError):
        embedder.embed(["fine", "poison"])


def test_embedders_satisfy_the_protocols(tmp_path: Path) -> None:
    fake = FakeEmbedder()
    cached = CachedEmbedder(fake, EmbeddingCache(tmp_path / "cache.sqlite"))
    local = LocalEmbedder()
    remote = OpenAIEmbedder(base_url="http://127.0.0.1:9/v1", model="m", dimension=8)
    for embedder in (fake, cached, local, remote):
        assert isinstance(embedder, Embedder)
        assert isinstance(embedder, PerTextEmbedder)


class OnlyEmbed:
    """An embedder with just ``embed``: the generic per-text fallback must handle it."""

    model_id = "only-embed"
    dimension = 4
    max_tokens = 16

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if any("bad" in t for t in texts):
            raise ItemError("embed_error", "bad text")
        return [[1.0, 0.0, 0.0, 0.0] for _ in texts]


def test_embed_each_falls_back_to_one_text_at_a_time() -> None:
    outcomes = embed_each(OnlyEmbed(), ["good", "bad", "good too"])
    assert [isinstance(o, ItemError) for o in outcomes] == [False, True, False]


def test_cache_hits_misses_and_never_embeds_twice(tmp_path: Path) -> None:
    inner = FakeEmbedder(dimension=16)
    path = tmp_path / "state" / "embeddings.sqlite"
    cached = CachedEmbedder(inner, EmbeddingCache(path))
    first = cached.embed(["a", "b", "a"])
    assert (cached.hits, cached.misses, cached.embedded, inner.embedded) == (0, 3, 2, 2)
    second = cached.embed(["b", "c", "a"])
    assert (cached.hits, cached.misses, cached.embedded, inner.embedded) == (2, 4, 3, 3)
    assert second[0] == first[1] and second[2] == first[0]
    cached.cache.close()
    reopened = CachedEmbedder(FakeEmbedder(dimension=16), EmbeddingCache(path))
    assert reopened.embed(["a", "b", "c"]) == [first[0], first[1], second[1]]
    assert (reopened.hits, reopened.misses, reopened.embedded) == (3, 0, 0)


def test_cache_keys_include_the_model(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    small, large = FakeEmbedder(dimension=8), FakeEmbedder(dimension=12)
    CachedEmbedder(small, cache).embed(["same text"])
    other = CachedEmbedder(large, cache)
    assert len(other.embed(["same text"])[0]) == 12
    assert other.misses == 1
    assert cache_key("m1", "t") != cache_key("m2", "t") != cache_key("m1", "t ")


def test_failures_are_returned_per_text_and_not_cached(tmp_path: Path) -> None:
    inner = FakeEmbedder(fail_when=lambda t: t == "bad")
    cached = CachedEmbedder(inner, EmbeddingCache(tmp_path / "c.sqlite"))
    outcomes = cached.embed_each(["ok", "bad", "ok"])
    assert isinstance(outcomes[1], ItemError)
    assert outcomes[0] == outcomes[2]
    assert len(cached.cache) == 1
    assert isinstance(cached.embed_each(["bad"])[0], ItemError)
    with pytest.raises(ItemError):
        cached.embed(["ok", "bad"])


def test_hit_and_miss_return_identical_float32_values(tmp_path: Path) -> None:
    cached = CachedEmbedder(FakeEmbedder(dimension=8), EmbeddingCache(tmp_path / "c.sqlite"))
    assert cached.embed(["x y z"]) == cached.embed(["x y z"])


def test_cache_holds_many_entries(tmp_path: Path) -> None:
    """Many entries in bulk: every key found, an absent one not (speed is for bench/)."""
    cache = EmbeddingCache(tmp_path / "big.sqlite")
    vector = np.full(384, 0.1, dtype=np.float32)  # any float sequence will do
    keys = [cache_key("m", f"text {i}") for i in range(100_000)]
    for at in range(0, len(keys), 5_000):
        cache.put_many((key, vector) for key in keys[at : at + 5_000])
    found = cache.get_many([*keys[::50], cache_key("m", "absent")])
    assert len(found) == 2_000 and len(cache) == 100_000


def test_build_embedder_by_kind() -> None:
    assert isinstance(build_embedder("fake", dimension=8), FakeEmbedder)
    with pytest.raises(ConfigError):
        build_embedder("nope")
    with pytest.raises(ConfigError):
        build_embedder("fake", colour="blue")
