"""Generated documents for the pipeline tests: seeded, so every failure reproduces."""

from __future__ import annotations

import random

WORDS = [
    "river",
    "stone",
    "water",
    "mountain",
    "index",
    "search",
    "vector",
    "token",
    "chunk",
    "budget",
    "section",
    "paragraph",
    "harbour",
    "lantern",
    "meadow",
    "copper",
    "signal",
    "orbit",
    "thunder",
    "willow",
    "garden",
    "engine",
    "archive",
]


def sentence(rng: random.Random, low: int = 5, high: int = 20) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(low, high))]
    return " ".join(words).capitalize() + rng.choice(".!?")


def paragraph(rng: random.Random, sentences: tuple[int, int] = (1, 6)) -> str:
    return " ".join(sentence(rng) for _ in range(rng.randint(*sentences)))


def long_document(rng: random.Random, paragraphs: int = 60, every: int = 7) -> list[str]:
    """Blocks of a Markdown document: a ``##`` section every ``every`` paragraphs."""
    blocks: list[str] = []
    for i in range(paragraphs):
        if i % every == 0:
            blocks.append(f"## Section {i // every}")
        blocks.append(paragraph(rng))
    return blocks
