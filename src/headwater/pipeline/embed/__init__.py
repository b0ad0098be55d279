"""Embedders: the bundled local model, OpenAI-compatible endpoints, a fake, a cache.

Importing this package loads neither torch nor a model, nor any embedder's client
library: the names below are imported on first use (PEP 562), so the registry (which
needs only ``base``) does not pull in httpx for the OpenAI client or numpy for the cache.
``build_embedder`` picks an implementation by name, as configuration spells it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from headwater.errors import ConfigError
from headwater.pipeline.embed.base import Embedder, TokenCounter

if TYPE_CHECKING:
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

_WHERE = {
    "cache": ("CachedEmbedder", "EmbeddingCache", "cache_key"),
    "counting": ("BatchTokenCounter", "WhitespaceCounter", "count_tokens_many"),
    "each": ("EmbedOutcome", "PerTextEmbedder", "embed_each"),
    "fake": ("FakeEmbedder",),
    "local": ("LOCAL_MODEL_ID", "LocalEmbedder", "TokenizerCounter"),
    "openai": ("OpenAIEmbedder",),
}
_MODULE_OF = {name: module for module, names in _WHERE.items() for name in names}

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


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


def build_embedder(kind: str, **options: Any) -> Embedder:
    """An embedder of ``kind`` (``local``, ``openai`` or ``fake``) built from ``options``
    (the keyword arguments of its class)."""
    if kind not in EMBEDDER_KINDS:
        raise ConfigError(
            f"embedder kind {kind!r} is unknown; expected one of {', '.join(EMBEDDER_KINDS)}"
        )
    names = {"local": "LocalEmbedder", "openai": "OpenAIEmbedder", "fake": "FakeEmbedder"}
    factory: Any = __getattr__(names[kind])
    try:
        embedder: Embedder = factory(**options)
    except TypeError as exc:
        raise ConfigError(f"embedder {kind!r} options are wrong: {exc}") from exc
    return embedder
