"""Per-text embedding results: which texts of a batch failed, and why.

``Embedder.embed`` is all or nothing: one bad text raises. The indexer needs more: a
batch of chunks from many documents must fail only the documents whose texts failed.
``embed_each`` returns, in order, a vector or the ``ItemError`` of each text; embedders
that can do better than the fallback here implement ``PerTextEmbedder.embed_each``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from headwater.errors import ItemError
from headwater.pipeline.embed.base import Embedder

EmbedOutcome = list[float] | ItemError
"""A unit vector, or the error that kept one text from being embedded."""


@runtime_checkable
class PerTextEmbedder(Embedder, Protocol):
    """An embedder that reports a failure per text instead of failing the batch."""

    def embed_each(self, texts: Sequence[str]) -> list[EmbedOutcome]:
        """One vector or ``ItemError`` per text, in order. ``TransientError`` is raised
        (not returned) when the whole batch could not be tried: the model or endpoint
        is unavailable, not any one text."""
        ...


def embed_each(embedder: Embedder, texts: Sequence[str]) -> list[EmbedOutcome]:
    """Per-text outcomes from any embedder: its own ``embed_each``, or ``embed`` on the
    batch and, when that raises ``ItemError``, on one text at a time."""
    if not texts:
        return []
    if isinstance(embedder, PerTextEmbedder):
        return embedder.embed_each(texts)
    try:
        return list(embedder.embed(texts))
    except ItemError:
        if len(texts) == 1:
            raise
    outcomes: list[EmbedOutcome] = []
    for text in texts:
        try:
            outcomes.append(embedder.embed([text])[0])
        except ItemError as exc:
            outcomes.append(exc)
    return outcomes


def first_error(outcomes: Sequence[EmbedOutcome]) -> list[list[float]]:
    """The vectors of ``outcomes``, or the first error raised (``embed`` semantics)."""
    vectors: list[list[float]] = []
    for outcome in outcomes:
        if isinstance(outcome, ItemError):
            raise outcome
        vectors.append(outcome)
    return vectors
