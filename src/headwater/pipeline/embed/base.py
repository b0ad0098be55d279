"""The embedder contract.

An embedder turns texts into unit-length float vectors of a fixed dimension. It also
owns the tokenizer the chunker measures budgets with, so a chunk never exceeds what the
model reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable


@runtime_checkable
class TokenCounter(Protocol):
    """Counts the tokens a model would read."""

    def count_tokens(self, text: str) -> int:
        """Tokens the model would read for ``text`` (special tokens excluded)."""
        ...


@runtime_checkable
class Embedder(TokenCounter, Protocol):
    """An embedding model: texts in, one vector per text out."""

    @property
    def model_id(self) -> str:
        """Stable id of the model; part of the pipeline version and the cache key."""
        ...

    @property
    def dimension(self) -> int:
        """The length of every vector."""

    @property
    def max_tokens(self) -> int:
        """The model's input limit in tokens (the chunk budget never exceeds it)."""
        ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order. Raises ItemError for a text it cannot embed,
        TransientError for a passing fault."""
        ...
