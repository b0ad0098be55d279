"""The chunker's work grows linearly with the text, and one huge document is refused.

Work is counted, never timed: a counting tokenizer seam sums the tokens the chunker asks
for, and ``ChunkWork`` sums the gaps it looks at while choosing cuts. Both must stay under
the same constant times the size of the text at 20k and at 80k words.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest
from pipeline_docs import WORDS

from headwater.errors import ItemError
from headwater.pipeline._cuts import Unit, cut
from headwater.pipeline.chunk import _WORD, _WORDS, ChunkerSettings, ChunkWork, chunk_document
from headwater.pipeline.embed.local import TokenizerCounter


class CountingTokenizer:
    """The real tokenizer, counting every call and every token it returns."""

    def __init__(self, inner: TokenizerCounter) -> None:
        self.inner = inner
        self.calls = 0
        self.tokens = 0

    def count_tokens(self, text: str) -> int:
        return self.count_tokens_batch([text])[0]

    def count_tokens_batch(self, texts: Sequence[str]) -> list[int]:
        counts = self.inner.count_tokens_batch(texts)
        self.calls += len(texts)
        self.tokens += sum(counts)
        return counts


def unpunctuated(words: int, seed: int = 1) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(words))


def chunk_with_work(
    text: str, counter: CountingTokenizer | TokenizerCounter, settings: ChunkerSettings
) -> tuple[int, ChunkWork]:
    work = ChunkWork()
    chunks = chunk_document(
        document_id="doc-1",
        pipeline_version="pv-1",
        text=text,
        title="A run-on document",
        metadata={},
        counter=counter,
        settings=settings,
        work=work,
    )
    return len(chunks), work


@pytest.mark.parametrize("repeated", [False, True], ids=["random-words", "one-word"])
def test_work_is_linear_in_unpunctuated_text(tokenizer: TokenizerCounter, repeated: bool) -> None:
    # A 10 MB run-on file used to keep the indexer busy for 13+ minutes: the cuts
    # peeled one chunk per pass off a section that never split.
    for words in (20_000, 80_000):
        text = " ".join(["lantern"] * words) if repeated else unpunctuated(words)
        counting = CountingTokenizer(tokenizer)
        chunks, work = chunk_with_work(text, counting, ChunkerSettings(max_tokens=254))
        text_tokens = tokenizer.count_tokens(text)
        assert chunks >= text_tokens // 254
        assert counting.tokens <= 4 * text_tokens, (words, counting.tokens, text_tokens)
        assert counting.calls <= 2 * words, (words, counting.calls)
        assert work.units <= words
        assert work.gaps_scanned <= 3 * work.units, (words, work)


def test_steadily_rising_scores_still_cut_in_n_log_n() -> None:
    # Every gap is beaten by the next one: only the last eligible gap is a local maximum,
    # so without halving each pass would peel one chunk off the end.
    units = [Unit(i, i + 1, _WORD, _WORDS, 1, i) for i in range(20_000)]
    work = ChunkWork()
    ranges = cut(units, 0, len(units), 254, 127, work)
    assert [r[0] for r in ranges] == sorted(r[0] for r in ranges)
    assert ranges[0][0] == 0 and ranges[-1][1] == len(units)
    assert all(b - a <= 254 for a, b in ranges)
    assert work.gaps_scanned <= 15 * len(units), work


def test_a_document_over_max_document_chars_is_too_large(tokenizer: TokenizerCounter) -> None:
    settings = ChunkerSettings(max_tokens=128, max_document_chars=10_000)
    text = unpunctuated(3_000)
    assert len(text) > 10_000
    with pytest.raises(ItemError) as raised:
        chunk_with_work(text, tokenizer, settings)
    assert raised.value.error_class == "too_large"
    assert raised.value.permanent
    message = str(raised.value)
    assert f"{len(text):,} characters" in message and "10,000" in message
    assert "max_document_chars" in message and "exclude" in message
    chunks, _ = chunk_with_work(text[:10_000], tokenizer, settings)  # at the limit: fine
    assert chunks > 0


def test_max_document_chars_has_a_default_and_validates() -> None:
    assert ChunkerSettings().max_document_chars == 5_000_000
    with pytest.raises(ValueError, match="max_document_chars"):
        ChunkerSettings(max_document_chars=0)
    assert ChunkerSettings(max_document_chars=7).fitted(64).max_document_chars == 7


def test_one_word_edited_in_run_on_text_changes_at_most_three_chunks(
    tokenizer: TokenizerCounter,
) -> None:
    # Linear work must not cost stability: word cuts stay content-defined (their keys
    # hash the text after the gap), so an edit moves only the cuts next to it.
    changed_total = 0
    for seed in range(12):
        rng = random.Random(seed)
        words = [rng.choice(WORDS) for _ in range(4000)]
        edited = list(words)
        edited[rng.randrange(500, 3500)] = "kingfisher"
        settings = ChunkerSettings(max_tokens=128)
        before = [c.text for c in chunk_document(document_id="d", pipeline_version="p",
                  text=" ".join(words), title="T", metadata={}, counter=tokenizer,
                  settings=settings)]  # fmt: skip
        after = {c.text for c in chunk_document(document_id="d", pipeline_version="p",
                 text=" ".join(edited), title="T", metadata={}, counter=tokenizer,
                 settings=settings)}  # fmt: skip
        changed = [text for text in before if text not in after]
        assert 1 <= len(changed) <= 3, (seed, len(changed), len(before))
        changed_total += len(changed)
    assert changed_total / 12 <= 2
