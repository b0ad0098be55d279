"""Counting tokens in batches: one call for many texts when the counter can.

The chunker counts every unit of every document; a fast tokenizer counts a list of
texts in parallel in one call, so counters that can expose ``count_tokens_batch``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from headwater.pipeline.embed.base import TokenCounter


@runtime_checkable
class BatchTokenCounter(TokenCounter, Protocol):
    """A token counter that also counts many texts in one call."""

    def count_tokens_batch(self, texts: Sequence[str]) -> list[int]:
        """The token count of each text, in order."""


def count_tokens_many(counter: TokenCounter, texts: Sequence[str]) -> list[int]:
    """Token counts of ``texts``, batched when the counter supports it."""
    if not texts:
        return []
    if isinstance(counter, BatchTokenCounter):
        return counter.count_tokens_batch(texts)
    return [counter.count_tokens(t) for t in texts]


class WhitespaceCounter:
    """Words separated by whitespace: a rough, model-free stand-in for a tokenizer."""

    def count_tokens(self, text: str) -> int:
        """The number of whitespace-separated words in ``text``."""
        return len(text.split())

    def count_tokens_batch(self, texts: Sequence[str]) -> list[int]:
        """The number of whitespace-separated words in each text."""
        return [len(t.split()) for t in texts]
