"""Chunker properties: budget, coverage, structure first, metadata rule, stable boundaries."""

from __future__ import annotations

import random

import pytest
from pipeline_docs import WORDS, long_document, paragraph, sentence

from headwater.identity import chunk_id
from headwater.pipeline.chunk import CHUNKER_VERSION, ChunkerSettings, chunk_document
from headwater.pipeline.embed.counting import WhitespaceCounter
from headwater.pipeline.embed.local import TokenizerCounter
from headwater.types import Chunk, MetadataValue


def chunks_of(
    text: str,
    counter: TokenizerCounter | WhitespaceCounter,
    *,
    budget: int = 128,
    title: str = "A document",
    metadata: dict[str, MetadataValue] | None = None,
) -> list[Chunk]:
    return chunk_document(
        document_id="doc-1",
        pipeline_version="pv-1",
        text=text,
        title=title,
        metadata=metadata or {},
        counter=counter,
        settings=ChunkerSettings(max_tokens=budget),
    )


def spans(text: str, chunks: list[Chunk]) -> list[tuple[int, int]]:
    """Where each chunk's text lies in the document (chunks are in order)."""
    found: list[tuple[int, int]] = []
    cursor = 0
    for chunk in chunks:
        start = text.index(chunk.text, cursor)
        found.append((start, start + len(chunk.text)))
        cursor = start + 1
    return found


def awkward_document(rng: random.Random) -> str:
    """Structure of every kind: headings, lists, code, run-on text, giant words."""
    blocks = long_document(rng, paragraphs=rng.randint(1, 30), every=rng.randint(2, 9))
    extras = [
        "### Minor heading\n\n" + paragraph(rng),
        "- " + "\n- ".join(sentence(rng) for _ in range(rng.randint(2, 30))),
        "```python\n" + "\n".join(f"x_{i} = {i}" for i in range(rng.randint(5, 200))) + "\n```",
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(100, 700))),
        "z" * rng.randint(100, 3000),
        "東京は日本の首都です。" * rng.randint(10, 120),
    ]
    for extra in rng.sample(extras, k=rng.randint(1, len(extras))):
        blocks.insert(rng.randint(0, len(blocks)), extra)
    return "\n\n".join(blocks)


@pytest.mark.parametrize("budget", [32, 128, 254])
def test_every_chunk_fits_covers_the_text_and_is_not_empty(
    tokenizer: TokenizerCounter, budget: int
) -> None:
    for seed in range(25):
        rng = random.Random(seed * 1000 + budget)
        text = awkward_document(rng)
        metadata: dict[str, MetadataValue] = {"tags": ["alpha", "beta"], "author": "Ann"}
        chunks = chunks_of(text, tokenizer, budget=budget, metadata=metadata)
        counts = tokenizer.count_tokens_batch([c.embed_text for c in chunks])
        assert max(counts) <= budget, seed
        assert all(c.text.strip() for c in chunks)
        assert "".join("".join(c.text.split()) for c in chunks) == "".join(text.split())
        assert [c.ordinal for c in chunks] == list(range(len(chunks)))
        assert [c.chunk_id for c in chunks] == [
            chunk_id("doc-1", "pv-1", i) for i in range(len(chunks))
        ]


def test_blank_text_has_no_chunks(tokenizer: TokenizerCounter) -> None:
    assert chunks_of(" \n\n ", tokenizer) == []


def test_embed_text_is_title_chunk_and_metadata(tokenizer: TokenizerCounter) -> None:
    (chunk,) = chunks_of("Body text.", tokenizer, title="Title", metadata={"k": ["a", "b"]})
    assert chunk.text == "Body text."
    assert chunk.embed_text == "Title\n\nBody text.\n\nk: a, b"


def test_metadata_over_a_quarter_of_the_budget_is_left_out(tokenizer: TokenizerCounter) -> None:
    small: dict[str, MetadataValue] = {"tags": ["one", "two"]}
    large: dict[str, MetadataValue] = {"tags": [f"tag{i}" for i in range(40)]}
    text = "\n\n".join(paragraph(random.Random(3)) for _ in range(10))
    with_small = chunks_of(text, tokenizer, budget=128, metadata=small)
    with_large = chunks_of(text, tokenizer, budget=128, metadata=large)
    assert all(c.embed_text.endswith("tags: one, two") for c in with_small)
    assert all("tag0" not in c.embed_text for c in with_large)
    assert all("tags" not in c.text for c in with_small)


def test_long_title_is_truncated_to_a_quarter(tokenizer: TokenizerCounter) -> None:
    title = " ".join(["lengthy"] * 200)
    chunks = chunks_of("Short body.", tokenizer, budget=64, title=title)
    first_line = chunks[0].embed_text.split("\n\n")[0]
    assert 0 < tokenizer.count_tokens(first_line) <= 16
    assert chunks[0].text == "Short body."


def test_sections_are_hard_boundaries_and_a_fitting_section_stays_whole(
    tokenizer: TokenizerCounter,
) -> None:
    text = "# Intro\n\nShort intro.\n\n## Setup\n\nStep one.\n\nStep two.\n\n## Use\n\nRun it."
    chunks = chunks_of(text, tokenizer, budget=254)
    assert [c.text for c in chunks] == [
        "# Intro\n\nShort intro.",
        "## Setup\n\nStep one.\n\nStep two.",
        "## Use\n\nRun it.",
    ]


def test_a_section_of_headings_alone_opens_the_next_section(
    tokenizer: TokenizerCounter,
) -> None:
    text = "# Guide\n\n## Setup\n\nStep one.\n\n## Use\n\n### Basics\n\n## Run\n\nRun it.\n\n## End"
    chunks = chunks_of(text, tokenizer, budget=254)
    # No chunk of headings alone, except a bare section with nothing after it.
    assert [c.text for c in chunks] == [
        "# Guide\n\n## Setup\n\nStep one.",
        "## Use\n\n### Basics\n\n## Run\n\nRun it.",
        "## End",
    ]


def test_text_under_a_bare_title_splits_it_off_again_and_moves_few_chunks(
    tokenizer: TokenizerCounter,
) -> None:
    rng = random.Random(21)
    blocks = ["# Handbook", *long_document(rng, paragraphs=40)]
    bare = "\n\n".join(blocks)
    intro = paragraph(rng)
    with_intro = "\n\n".join([blocks[0], intro, *blocks[1:]])
    before, after = chunks_of(bare, tokenizer), chunks_of(with_intro, tokenizer)
    assert before[0].text.startswith("# Handbook\n\n## Section 0\n\n")
    assert after[0].text == f"# Handbook\n\n{intro}"
    assert after[1].text.startswith("## Section 0")
    # The new chunk, the first chunk of the section below, at most one more; the rest
    # stays byte-identical (and the same holds when the paragraph is taken out again).
    for old, new in ((before, after), (after, before)):
        kept = {c.embed_text for c in old}
        assert 1 <= sum(c.embed_text not in kept for c in new) <= 3
        assert [c.text for c in new][4:] == [c.text for c in old][len(old) - len(new) + 4 :]


def test_minor_headings_and_paragraphs_are_preferred_cuts(tokenizer: TokenizerCounter) -> None:
    rng = random.Random(11)
    text = "\n\n".join(
        f"### Topic {i}\n\n{paragraph(rng, (3, 4))}\n\n{paragraph(rng, (3, 4))}" for i in range(8)
    )
    chunks = chunks_of(text, tokenizer, budget=128)
    paragraphs = set(text.split("\n\n"))
    for chunk in chunks:  # cuts fall between blocks: every chunk is whole blocks
        assert set(chunk.text.split("\n\n")) <= paragraphs
    assert sum(c.text.startswith("### ") for c in chunks) >= len(chunks) // 2


def test_long_paragraph_is_cut_at_sentences(tokenizer: TokenizerCounter) -> None:
    rng = random.Random(5)
    text = " ".join(sentence(rng) for _ in range(60))
    chunks = chunks_of(text, tokenizer, budget=64)
    assert len(chunks) > 3
    assert all(c.text[-1] in ".!?" for c in chunks)


def test_a_giant_word_is_cut_on_tokens(tokenizer: TokenizerCounter) -> None:
    chunks = chunks_of("x" * 5000, tokenizer, budget=32, title="")
    assert "".join(c.text for c in chunks) == "x" * 5000
    assert max(tokenizer.count_tokens_batch([c.embed_text for c in chunks])) <= 32


def test_heading_stays_with_its_paragraph(tokenizer: TokenizerCounter) -> None:
    rng = random.Random(8)
    text = "\n\n".join(f"### H{i}\n\n{paragraph(rng, (2, 3))}" for i in range(12))
    for chunk in chunks_of(text, tokenizer, budget=100):
        assert not chunk.text.rstrip().splitlines()[-1].startswith("###")


def edit_one_paragraph(tokenizer: TokenizerCounter, seed: int, budget: int) -> tuple[int, int, int]:
    """Edit one paragraph of a long document. Returns the number of chunks that changed,
    how many of those neither overlap the paragraph nor are its direct neighbours, and
    the most tokens between a changed chunk and the paragraph."""
    rng = random.Random(seed)
    blocks = long_document(rng, paragraphs=80)
    index = rng.choice([i for i, b in enumerate(blocks) if not b.startswith("#")])
    edited = list(blocks)
    edited[index] = paragraph(rng)
    before_text, after_text = "\n\n".join(blocks), "\n\n".join(edited)
    before = chunks_of(before_text, tokenizer, budget=budget)
    after = chunks_of(after_text, tokenizer, budget=budget)
    start = len("\n\n".join(blocks[:index])) + (2 if index else 0)
    end = start + len(blocks[index])
    placed = spans(before_text, before)
    touching = [i for i, (s, e) in enumerate(placed) if s < end and e > start]
    allowed = set(range(touching[0] - 1, touching[-1] + 2))
    kept = {c.text for c in after}
    changed = [i for i, c in enumerate(before) if c.text not in kept]
    distance = 0
    for i in changed:
        s, e = placed[i]
        between = before_text[e:start] if e <= start else before_text[end:s]
        distance = max(distance, tokenizer.count_tokens(between))
    return len(changed), len([i for i in changed if i not in allowed]), distance


@pytest.mark.parametrize("budget", [64, 128, 254])
def test_editing_one_paragraph_changes_only_nearby_chunks(
    tokenizer: TokenizerCounter, budget: int
) -> None:
    seeds = 60
    changed_total = within_one_neighbour = 0
    for seed in range(seeds):
        changed, beyond, distance = edit_one_paragraph(tokenizer, seed, budget)
        # Cuts depend on nearby text only: nothing far from the edit moves.
        assert distance < 2 * budget, f"seed {seed}: a chunk {distance} tokens away changed"
        changed_total += changed
        within_one_neighbour += beyond == 0
    # In practice: the chunks holding the paragraph and at most one neighbour per side.
    assert within_one_neighbour >= 0.9 * seeds
    assert changed_total / seeds <= 2.5


def test_unchanged_document_gives_identical_chunks(tokenizer: TokenizerCounter) -> None:
    text = "\n\n".join(long_document(random.Random(2)))
    assert chunks_of(text, tokenizer) == chunks_of(text, tokenizer)


def test_chunks_use_most_of_the_budget(tokenizer: TokenizerCounter) -> None:
    rng = random.Random(4)
    text = "\n\n".join(paragraph(rng, (1, 3)) for _ in range(300))
    chunks = chunks_of(text, tokenizer, budget=254)
    fill = sum(tokenizer.count_tokens_batch([c.embed_text for c in chunks])) / len(chunks)
    assert fill >= 0.6 * 254


def test_settings_validate_and_fit_the_model() -> None:
    with pytest.raises(ValueError):
        ChunkerSettings(max_tokens=4)
    assert ChunkerSettings(max_tokens=512).fitted(254).max_tokens == 254
    assert ChunkerSettings(max_tokens=128).fitted(254).max_tokens == 128
    assert CHUNKER_VERSION
