"""Token ids handed from the chunker to the embedder, so a chunk is tokenized once.

The chunker counts every finished ``embed_text`` exactly with the model's tokenizer, and
the embedder used to tokenize the same texts again to embed them. Two optional abilities
let the ids travel instead: a counter that returns the ids it counts (``TokenIdCounter``;
``chunk_document`` keeps them per ``embed_text`` when asked) and an embedder that embeds
texts with their ids (``TokenEmbedder``), tokenizing only the texts that came without.
Ids are the tokenizer's plain ids: no special tokens, no truncation (what the count is).

Both are optional, and an ability may be absent behind a wrapper: ``token_ids_batch``
answers None when it has no ids to give, and ``embed_tokens`` here falls back to
``embed_each`` for any embedder without the ability (fake, OpenAI, torch).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from headwater.pipeline.embed.base import Embedder, TokenCounter
from headwater.pipeline.embed.each import EmbedOutcome, embed_each

TokenIds = Sequence[int]
"""The plain token ids of one text: no special tokens, no truncation."""


@runtime_checkable
class TokenIdCounter(TokenCounter, Protocol):
    """A token counter that can give the ids it counts."""

    def token_ids_batch(self, texts: Sequence[str]) -> list[list[int]] | None:
        """The plain ids of each text, in order (their lengths are the token counts), or
        None when this counter has no ids that would be used (then count instead)."""
        ...


@runtime_checkable
class TokenEmbedder(Embedder, Protocol):
    """An embedder that takes texts with their plain token ids."""

    def embed_tokens(
        self, texts: Sequence[str], ids: Sequence[TokenIds | None]
    ) -> list[EmbedOutcome]:
        """As ``embed_each``; ``ids[i]``, when given, are ``texts[i]``'s plain ids (as
        ``token_ids_batch`` gives them), so that text is not tokenized again."""
        ...


def embed_tokens(
    embedder: Embedder, texts: Sequence[str], ids: Sequence[TokenIds | None] | None
) -> list[EmbedOutcome]:
    """Per-text outcomes of ``texts``: with their ids when the embedder takes them (and
    some were given), else ``embed_each``."""
    if ids is not None and isinstance(embedder, TokenEmbedder):
        return embedder.embed_tokens(texts, ids)
    return embed_each(embedder, texts)


def token_ids_of(counter: TokenCounter, texts: Sequence[str]) -> list[list[int]] | None:
    """The plain ids of ``texts`` when ``counter`` gives ids, else None."""
    if not texts or not isinstance(counter, TokenIdCounter):
        return None
    return counter.token_ids_batch(texts)
