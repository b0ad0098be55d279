"""How full the chunks are, and how many an edit re-embeds: the chunker's two goals at once.

The idea: fill and locality pull against each other (greedy packing fills chunks but
moves every later boundary on an edit), so measure both on the same documents. Fill is
each chunk's exact ``embed_text`` token count over the budget (254 for the bundled model),
on the generated bench corpus (parsed the way a sync parses it, metadata ``path``) and on
the man-page retrieval corpus, as plain text (``man``) and as Markdown (``man-md``, the
way ``bench/retrieval/run.py --markdown`` loads it). Locality: ``--edits`` random
one-paragraph edits (replace or delete one paragraph of a Markdown document, or insert
one after any of its blocks, headings included; seeded), each chunked before and after;
a chunk is re-embedded when its ``embed_text`` was not among the document's chunks
before (the embedding cache is keyed by that text). Uses the bundled tokenizer only (no
model, no torch).

    .venv/bin/python bench/corpus.py generate --out bench/out/corpus-2k --docs 2000 --seed 1
    .venv/bin/python bench/retrieval/corpus.py --docs 1000 --out bench/out/retrieval/corpus.jsonl
    PYTHONPATH=src .venv/bin/python bench/chunk_fill.py --corpus bench/out/corpus-2k \\
        --man bench/out/retrieval/corpus.jsonl --edits 200
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import new_paragraph

from headwater.pipeline.chunk import CHUNKER_VERSION, ChunkerSettings, chunk_document
from headwater.pipeline.embed.local import TokenizerCounter, bundled_model_dir
from headwater.pipeline.parse import parse
from headwater.types import Chunk, MetadataValue

Doc = tuple[str, str, str, dict[str, MetadataValue]]  # name, title, text, metadata


def bench_docs(corpus: Path, limit: int | None) -> list[Doc]:
    files = sorted(p for p in (corpus / "docs").rglob("*") if p.is_file())[:limit]
    docs: list[Doc] = []
    for path in files:
        rel = path.relative_to(corpus / "docs").as_posix()
        parsed = parse(path.read_bytes(), name=path.name, media_type=None)
        docs.append((rel, parsed.title or path.stem, parsed.text, {"path": rel}))
    return docs


def man_docs(corpus: Path, markdown: bool = False) -> list[Doc]:
    """The man pages as plain text, or (``markdown``) as the retrieval benchmark's
    ``--markdown`` loads them: ``# name`` on top, section lines as ``##`` headings."""
    pages = [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines()]
    if markdown:
        pages = [_retrieval_corpus().as_markdown(p) for p in pages]
    suffix = ".md" if markdown else ""
    return [(p["name"] + suffix, p["name"], p["text"], {}) for p in pages]


def _retrieval_corpus() -> Any:
    """bench/retrieval/corpus.py (its name clashes with bench/corpus.py on sys.path)."""
    path = Path(__file__).resolve().parent / "retrieval" / "corpus.py"
    spec = importlib.util.spec_from_file_location("retrieval_corpus", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Chunker:
    def __init__(self) -> None:
        self.counter = TokenizerCounter(bundled_model_dir() / "tokenizer.json")
        self.settings = ChunkerSettings().fitted(254)
        self.seconds = 0.0

    def chunks(self, doc: Doc) -> list[Chunk]:
        name, title, text, metadata = doc
        started = time.perf_counter()
        chunks = chunk_document(
            document_id=name,
            pipeline_version="bench",
            text=text,
            title=title,
            metadata=metadata,
            counter=self.counter,
            settings=self.settings,
        )
        self.seconds += time.perf_counter() - started
        return chunks


def fill(chunker: Chunker, docs: list[Doc]) -> dict[str, Any]:
    chunker.seconds = 0.0
    per_doc = [chunker.chunks(doc) for doc in docs]
    texts = [c.embed_text for chunks in per_doc for c in chunks]
    budget = chunker.settings.max_tokens
    fills = [n / budget for n in chunker.counter.count_tokens_batch(texts)]
    return {
        "documents": len(docs),
        "chunks": len(fills),
        "chunks_per_doc": len(fills) / len(docs),
        "mean_fill": statistics.fmean(fills),
        "median_fill": statistics.median(fills),
        "p10_fill": statistics.quantiles(fills, n=10)[0],
        "under_half": sum(f < 0.5 for f in fills) / len(fills),
        "seconds": chunker.seconds,
    }


def edited(text: str, rng: random.Random, seed: int) -> tuple[str, str]:
    """One random one-paragraph edit of a Markdown text: (kind, new text)."""
    blocks = text.split("\n\n")
    prose = [i for i, b in enumerate(blocks) if b.strip() and not b.lstrip().startswith("#")]
    kind = rng.choice(["replace", "insert", "delete"])
    # Replace or delete a paragraph; insert one after any block, a heading included (a
    # first paragraph under a bare title heading gives its section text of its own).
    index = rng.choice(
        prose if kind != "insert" else [i for i, b in enumerate(blocks) if b.strip()]
    )
    fresh = new_paragraph(seed, f"chunk-fill:{index}:{rng.random()}", blocks[index])
    if kind == "replace":
        blocks[index] = fresh
    elif kind == "insert":
        blocks.insert(index + 1, fresh)
    else:
        del blocks[index]
    return kind, "\n\n".join(blocks)


def locality(chunker: Chunker, docs: list[Doc], edits: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    markdown = [d for d in docs if d[0].endswith(".md") and d[2].count("\n\n") > 8]
    counts: Counter[str] = Counter()
    by_kind: dict[str, list[int]] = {"replace": [], "insert": [], "delete": []}
    sizes = []
    for _ in range(edits):
        name, title, text, metadata = rng.choice(markdown)
        before = chunker.chunks((name, title, text, metadata))
        kind, after_text = edited(text, rng, seed)
        after = chunker.chunks((name, title, after_text, metadata))
        old = {c.embed_text for c in before}
        re_embedded = sum(c.embed_text not in old for c in after)
        by_kind[kind].append(re_embedded)
        counts[str(re_embedded) if re_embedded <= 3 else ">3"] += 1
        sizes.append(len(before))
    every = [n for ns in by_kind.values() for n in ns]
    return {
        "edits": edits,
        "chunks_per_edited_doc": statistics.fmean(sizes),
        "mean": statistics.fmean(every),
        "max": max(every),
        "histogram": {k: counts[k] for k in ("0", "1", "2", "3", ">3")},
        "max_by_kind": {k: max(v) if v else None for k, v in by_kind.items()},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=Path("bench/out/corpus-2k"))
    parser.add_argument("--man", type=Path, default=Path("bench/out/retrieval/corpus.jsonl"))
    parser.add_argument("--limit", type=int, default=None, help="bench documents to read")
    parser.add_argument("--edits", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--edit-corpus",
        choices=["bench", "man-md"],
        default="bench",
        help="whose Markdown documents the edits go to (default: bench)",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    chunker = Chunker()
    corpora = {"bench": bench_docs(args.corpus, args.limit)}
    if args.man.is_file():
        corpora["man"] = man_docs(args.man)
        corpora["man-md"] = man_docs(args.man, markdown=True)
    result: dict[str, Any] = {"chunker": CHUNKER_VERSION, "budget": chunker.settings.max_tokens}
    for name, docs in corpora.items():
        result[name] = fill(chunker, docs)
    result["edits"] = locality(chunker, corpora[args.edit_corpus], args.edits, args.seed)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"chunker {result['chunker']}, budget {result['budget']} tokens")
    print("| corpus | docs | chunks | chunks/doc | mean fill | median fill | p10 | < 50 % | s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name in corpora:
        r = result[name]
        print(
            f"| {name} | {r['documents']:,} | {r['chunks']:,} | {r['chunks_per_doc']:.2f} | "
            f"{r['mean_fill']:.1%} | {r['median_fill']:.1%} | {r['p10_fill']:.1%} | "
            f"{r['under_half']:.1%} | {r['seconds']:.1f} |"
        )
    e = result["edits"]
    print(
        f"\n{e['edits']} one-paragraph edits of {args.edit_corpus} documents "
        f"(docs of {e['chunks_per_edited_doc']:.1f} chunks): "
        f"re-embedded mean {e['mean']:.2f}, max {e['max']} (by kind {e['max_by_kind']}); "
        f"histogram {e['histogram']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
