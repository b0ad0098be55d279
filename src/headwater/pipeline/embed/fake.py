"""A fast, deterministic embedder for tests and ``--embedder fake`` benchmarks.

Vectors are feature-hashed bags of words (crc32 of each lower-cased word picks a
dimension and a sign), normalized to unit length: identical texts get identical vectors
and texts sharing words land closer than unrelated ones, so search over fake vectors
still behaves plausibly. Tokens are whitespace-separated words. ``fail_when`` injects
per-text failures.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Callable, Sequence

from headwater.errors import ItemError
from headwater.pipeline.embed.each import EmbedOutcome, first_error


class FakeEmbedder:
    """Hash-based unit vectors; no model, no I/O. ``embedded`` counts texts embedded."""

    def __init__(
        self,
        dimension: int = 64,
        *,
        max_tokens: int = 256,
        fail_when: Callable[[str], bool] | None = None,
        model_id: str | None = None,
    ) -> None:
        if dimension < 2:
            raise ValueError(f"dimension was {dimension}; expected at least 2")
        self._dimension = dimension
        self._max_tokens = max_tokens
        self._fail_when = fail_when
        self._model_id = model_id or f"fake/bag-of-words-{dimension}"
        self.embedded = 0
        self.calls = 0

    @property
    def model_id(self) -> str:
        """The fake model's id."""
        return self._model_id

    @property
    def dimension(self) -> int:
        """The length of every vector."""
        return self._dimension

    @property
    def max_tokens(self) -> int:
        """The token limit per text."""
        return self._max_tokens

    def count_tokens(self, text: str) -> int:
        """The number of whitespace-separated words in ``text``."""
        return len(text.split())

    def count_tokens_batch(self, texts: Sequence[str]) -> list[int]:
        """The number of whitespace-separated words in each text."""
        return [len(t.split()) for t in texts]

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, or the first error."""
        return first_error(self.embed_each(texts))

    def embed_each(self, texts: Sequence[str]) -> list[EmbedOutcome]:
        """One deterministic vector (or programmed error) per text."""
        self.calls += 1
        outcomes: list[EmbedOutcome] = []
        for text in texts:
            if self._fail_when is not None and self._fail_when(text):
                outcomes.append(ItemError("embed_error", f"fake failure for {text[:40]!r}"))
            else:
                outcomes.append(self.vector(text))
                self.embedded += 1
        return outcomes

    def vector(self, text: str) -> list[float]:
        """The unit vector of one text."""
        import numpy as np  # here: describing the embedder (status) needs no numpy

        hashes = np.fromiter(
            (zlib.crc32(word.encode()) for word in text.lower().split()), dtype=np.uint32
        )
        if hashes.size:
            signs = np.where(hashes & 1, 1.0, -1.0)
            vector: np.ndarray[tuple[int], np.dtype[np.float64]] = np.bincount(
                (hashes >> 1) % self._dimension, weights=signs, minlength=self._dimension
            ).astype(np.float64)
        else:
            vector = np.zeros(self._dimension)
        norm = float(np.linalg.norm(vector))
        if norm == 0.0:  # no words, or their signs cancelled: fall back to the text hash
            seed = hashlib.sha256(text.encode()).digest()
            vector = np.random.default_rng(list(seed)).standard_normal(self._dimension)
            norm = float(np.linalg.norm(vector))
        result: list[float] = (vector / norm).tolist()
        return result
