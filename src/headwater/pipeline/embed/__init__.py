"""Embedders: the bundled local model, OpenAI-compatible endpoints, a fake, a cache.

Importing this package loads neither torch nor a model; ``build_embedder`` picks an
implementation by name, as configuration spells it.
"""

from __future__ import annotations

from typing import Any

from headwater.errors import ConfigError
from headwater.pipeline.embed.base import Embedder, TokenCounter
from headwater.pipeline.embed.cache import CachedEmbedder, EmbeddingCache, cache_key
from headwater.pipeline.embed.counting import (
    BatchTokenCounter,
    WhitespaceCounter,
    count_tokens_many,
)
from headwater.pipeline.embed.each import EmbedOutcome, PerTextEmbedder, embed_each
from headwater.pipeline.embed.fake import FakeEmbedder
from headwater.pipeline.embed.local import LOCAL_MODEL_ID, LocalEmbedder, TokenizerCounter
from headwater.pipeline.embed.openai import OpenAIEmbedder

__all__ = [
    "EMBEDDER_KINDS",
    "LOCAL_MODEL_ID",
    "BatchTokenCounter",
    "CachedEmbedder",
    "EmbedOutcome",
    "Embedder",
    "EmbeddingCache",
    "FakeEmbedder",
    "LocalEmbedder",
    "OpenAIEmbedder",
    "PerTextEmbedder",
    "TokenCounter",
    "TokenizerCounter",
    "WhitespaceCounter",
    "build_embedder",
    "cache_key",
    "count_tokens_many",
    "embed_each",
]

EMBEDDER_KINDS = ("local", "openai", "fake")


def build_embedder(kind: str, **options: Any) -> Embedder:
    """An embedder of ``kind`` (``local``, ``openai`` or ``fake``) built from ``options``
    (the keyword arguments of its class)."""
    factories: dict[str, Any] = {
        "local": LocalEmbedder,
        "openai": OpenAIEmbedder,
        "fake": FakeEmbedder,
    }
    if kind not in factories:
        raise ConfigError(
            f"embedder kind {kind!r} is unknown; expected one of {', '.join(EMBEDDER_KINDS)}"
        )
    try:
        embedder: Embedder = factories[kind](**options)
    except TypeError as exc:
        raise ConfigError(f"embedder {kind!r} options are wrong: {exc}") from exc
    return embedder
