"""How the chunker scales on one run-on document: seconds for 10k to 320k words.

The idea: a text with no sentence or paragraph boundary is the chunker's worst case (it
must fall back to word cuts inside one giant section), so time it at sizes four times
apart; the work is linear when seconds per 10k words stay flat. Uses the bundled
tokenizer (no torch), one process, best of ``--repeat`` runs per size.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/chunk_scaling.py [--sizes 10000,20000,80000,320000]
"""

from __future__ import annotations

import argparse
import random
import time

from headwater.pipeline.chunk import ChunkerSettings, ChunkWork, chunk_document
from headwater.pipeline.embed.local import TokenizerCounter, bundled_model_dir

WORDS = ["river", "stone", "water", "mountain", "index", "search", "vector", "token"]


def run_on(
    words: int, tokenizer: TokenizerCounter, budget: int
) -> tuple[float, int, int, ChunkWork]:
    rng = random.Random(words)
    text = " ".join(rng.choice(WORDS) for _ in range(words))
    work = ChunkWork()
    started = time.perf_counter()
    chunks = chunk_document(
        document_id="bench",
        pipeline_version="bench",
        text=text,
        title="A run-on document",
        metadata={},
        counter=tokenizer,
        settings=ChunkerSettings(max_tokens=budget),
        work=work,
    )
    return time.perf_counter() - started, len(text), len(chunks), work


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,20000,80000,320000")
    parser.add_argument("--budget", type=int, default=254)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    tokenizer = TokenizerCounter(bundled_model_dir() / "tokenizer.json")
    tokenizer.count_tokens("warm up")
    print("| words | chars | chunks | seconds | s per 10k words | gaps scanned per unit |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for words in (int(size) for size in args.sizes.split(",")):
        best = min(
            (run_on(words, tokenizer, args.budget) for _ in range(args.repeat)),
            key=lambda result: result[0],
        )
        seconds, chars, chunks, work = best
        print(
            f"| {words:,} | {chars:,} | {chunks:,} | {seconds:.2f} | "
            f"{seconds / words * 10_000:.2f} | {work.gaps_scanned / max(work.units, 1):.2f} |"
        )


if __name__ == "__main__":
    main()
