"""Retrieval quality of vector, keyword and every hybrid fusion on real man pages.

The idea: measure ranking, not speed. The corpus (``corpus.py``) is chunked by
Headwater's own chunker, embedded by the bundled model (``LocalEmbedder``) and loaded
into the ``sqlite`` sink through its ``replace``; each query (``queries.py``) asks the
sink for its vector and keyword lists once, the way hybrid search does (``DEPTH`` chunks
each), and every method in ``headwater.search.fusion.FUSIONS`` fuses the same two lists.
Hits collapse to documents (first chunk wins), then recall@1/@5/@10 and MRR@10 are
computed per query kind. Then a held-out check of the ``confident`` fusion's three
constants: chosen from ``GRID`` on one half of the queries, judged on the other, next to
the shipped constants. Embeddings are cached in ``bench/out/retrieval/`` by text hash
(``embeddings-<runtime>.npz``), so a rerun embeds nothing.

    .venv/bin/python bench/retrieval/run.py                    # builds the corpus when missing
    .venv/bin/python bench/retrieval/run.py --runtime torch    # the same on torch
    .venv/bin/python bench/retrieval/run.py --markdown         # pages as Markdown, see below

``--markdown`` loads each page as a Markdown document instead: ``# name`` on top and every
section line (``NAME``, ``DESCRIPTION``, …) as a ``##`` heading, so the chunker's section
rules are measured too (the queries stay the same); results go to
``results-<runtime>-markdown``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

# bench/retrieval first: its corpus.py, not bench/corpus.py, is ``corpus`` here.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import as_markdown
from measure import markdown_table
from queries import Query, build

OUT = Path("bench/out/retrieval")
DEPTH = 40  # chunks asked of each list: 10 documents x the search service's overfetch of 4
CUTOFFS = (1, 5, 10)
PIPELINE = "bench-retrieval-1"


class CachedEmbedder:
    """The bundled model on one runtime (``torch``, ``onnx``, ``onnx-int8``) behind a disk
    cache keyed by sha256 of the text (one cache file per runtime)."""

    def __init__(self, path: Path, runtime: str = "onnx-int8") -> None:
        from headwater.pipeline.embed.registry import LocalFactory, LocalOptions

        self.model = LocalFactory().build(LocalOptions(), runtime)
        self.path = path
        self.cache: dict[str, np.ndarray] = {}
        if path.is_file():
            with np.load(path) as data:
                self.cache = dict(zip(data["keys"].tolist(), data["vectors"], strict=True))
        self.embedded = 0

    def embed(self, texts: Sequence[str]) -> list[np.ndarray]:
        keys = [hashlib.sha256(t.encode()).hexdigest() for t in texts]
        missing = sorted(
            {k: t for k, t in zip(keys, texts, strict=True) if k not in self.cache}.items()
        )
        for start in range(0, len(missing), 256):
            part = missing[start : start + 256]
            vectors = self.model.embed([t for _, t in part])
            for (key, _), vector in zip(part, vectors, strict=True):
                self.cache[key] = np.asarray(vector, np.float32)
            self.embedded += len(part)
            done = start + len(part)
            print(f"  embedded {done}/{len(missing)}", file=sys.stderr, flush=True)
        if missing:
            self.save()
        return [self.cache[k] for k in keys]

    def save(self) -> None:
        keys = sorted(self.cache)
        np.savez(self.path, keys=np.array(keys), vectors=np.stack([self.cache[k] for k in keys]))


def load(sink: Any, pages: list[dict[str, str]], embedder: CachedEmbedder) -> int:
    from headwater.identity import document_id
    from headwater.pipeline.chunk import ChunkerSettings, chunk_document
    from headwater.types import Access, EmbeddedChunk, IndexDocument

    settings = ChunkerSettings().fitted(embedder.model.max_tokens)
    planned = []
    for page in pages:
        doc_id = document_id("bench", "man", "man1", page["name"])
        chunks = chunk_document(
            document_id=doc_id,
            pipeline_version=PIPELINE,
            text=page["text"],
            title=page["name"],
            metadata={},
            counter=embedder.model,
            settings=settings,
        )
        planned.append(
            (IndexDocument(doc_id, "man", page["name"], page["name"], Access(public=True)), chunks)
        )
    vectors = iter(embedder.embed([c.embed_text for _, chunks in planned for c in chunks]))
    total = 0
    for document, chunks in planned:
        items = [EmbeddedChunk(c, next(vectors).tolist()) for c in chunks]
        sink.replace(document, items, 1)
        total += len(items)
    return total


Lists = list[tuple[Any, Any]]  # per query: (vector hits, keyword hits), DEPTH each


def search_lists(sink: Any, queries: list[Query], embedder: CachedEmbedder) -> Lists:
    """Each query's vector and keyword lists, asked of the sink once."""
    from headwater.search.terms import answering
    from headwater.sinks.base import SearchRequest
    from headwater.types import SearchMode, caller_principals

    principals = caller_principals("bench@example.org")
    vectors = embedder.embed([q.text for q in queries])
    found: Lists = []
    for query, vector in zip(queries, vectors, strict=True):
        pair = []
        for mode in (SearchMode.VECTOR, SearchMode.KEYWORD):
            request = SearchRequest(query.text, vector.tolist(), principals, DEPTH, mode)
            hits = sink.search(request)
            pair.append(hits if mode is SearchMode.VECTOR else answering(query.text, hits))
        found.append((pair[0], pair[1]))
    return found


def rank_of(relevant: str, hits: Any) -> int | None:
    documents = list(dict.fromkeys(h.title for h in hits))[: max(CUTOFFS)]
    return documents.index(relevant) + 1 if relevant in documents else None


def ranks(queries: list[Query], lists: Lists) -> dict[str, list[int | None]]:
    """Per method, the 1-based document rank of each query's relevant page (None: not in top 10)."""
    from headwater.search.fusion import FUSIONS, fuse

    found: dict[str, list[int | None]] = defaultdict(list)
    for query, (vector, keyword) in zip(queries, lists, strict=True):
        candidates = {"vector": vector, "keyword": keyword}
        for name, fusion in FUSIONS.items():
            candidates[f"hybrid:{name}"] = fusion(vector, keyword, DEPTH)
        for name in FUSIONS:  # what search runs: the method, then the phrase rule
            candidates[f"hybrid:{name}+phrase"] = fuse(
                vector, keyword, limit=DEPTH, method=name, query=query.text
            )
        for method, hits in candidates.items():
            found[method].append(rank_of(query.relevant, hits))
    return found


# The grid the shipped constants were chosen from (KEYWORD_WEIGHT, KEYWORD_MARGIN,
# VECTOR_MARGIN; a margin of 9.0 switches that list's confidence rule off).
GRID = [
    (w, km, vm)
    for w in (0.5, 0.6, 0.7)
    for km in (0.1, 0.15, 0.2, 0.25)
    for vm in (0.1, 0.15, 0.2, 0.25, 9.0)
]


def held_out(queries: list[Query], lists: Lists) -> dict[str, Any]:
    """Choose ``confident``'s three constants on one half of the queries, judge on the other
    (fused as search does: ``confident``, then the phrase rule).

    Halves by sha256 of the relevant page's name (every kind split alike). A cell's score
    on a half: how many kinds it meets the goal on (hybrid recall@1 and MRR at least the
    better part's), then the mean MRR over kinds. Returns the cell chosen on the tuning
    half, the shipped constants, and both judged on the held-out half.
    """
    from headwater.search import fusion

    def half(query: Query) -> int:
        return hashlib.sha256(query.relevant.encode()).digest()[0] % 2

    halves: dict[int, list[int]] = {0: [], 1: []}
    for index, query in enumerate(queries):
        halves[half(query)].append(index)
    kinds = sorted({q.kind for q in queries})
    parts: dict[tuple[int, str], dict[str, dict[str, float]]] = {}
    for part, indexes in halves.items():
        for kind in kinds:
            mine = [i for i in indexes if queries[i].kind == kind]
            parts[(part, kind)] = {
                method: metrics([rank_of(queries[i].relevant, lists[i][j]) for i in mine])
                for j, method in enumerate(("vector", "keyword"))
            }

    def judge(cell: tuple[float, float, float], part: int) -> dict[str, Any]:
        shipped = (fusion.KEYWORD_WEIGHT, fusion.KEYWORD_MARGIN, fusion.VECTOR_MARGIN)
        fusion.KEYWORD_WEIGHT, fusion.KEYWORD_MARGIN, fusion.VECTOR_MARGIN = cell
        try:
            per_kind = {}
            for kind in kinds:
                mine = [i for i in halves[part] if queries[i].kind == kind]
                hybrid = metrics(
                    [
                        rank_of(
                            queries[i].relevant,
                            fusion.fuse(*lists[i], limit=DEPTH, query=queries[i].text),
                        )
                        for i in mine
                    ]
                )
                best = parts[(part, kind)]
                meets = all(
                    hybrid[m] >= max(best["vector"][m], best["keyword"][m]) for m in ("R@1", "MRR")
                )
                per_kind[kind] = {"meets": meets, "R@1": hybrid["R@1"], "MRR": hybrid["MRR"]}
        finally:
            fusion.KEYWORD_WEIGHT, fusion.KEYWORD_MARGIN, fusion.VECTOR_MARGIN = shipped
        met = sum(v["meets"] for v in per_kind.values())
        mean_mrr = sum(v["MRR"] for v in per_kind.values()) / len(kinds)
        return {"cell": cell, "kinds_met": met, "mean_MRR": mean_mrr, "per_kind": per_kind}

    tuned = max((judge(cell, 0) for cell in GRID), key=lambda r: (r["kinds_met"], r["mean_MRR"]))
    shipped = (fusion.KEYWORD_WEIGHT, fusion.KEYWORD_MARGIN, fusion.VECTOR_MARGIN)
    return {
        "queries": {"tune": len(halves[0]), "held_out": len(halves[1])},
        "chosen_on_tune": tuned,
        "chosen_judged_held_out": judge(tuned["cell"], 1),
        "shipped_judged_held_out": judge(shipped, 1),
        "parts_held_out": {kind: parts[(1, kind)] for kind in kinds},
    }


def metrics(found: list[int | None]) -> dict[str, float]:
    n = len(found)
    result = {f"R@{c}": sum(1 for r in found if r is not None and r <= c) / n for c in CUTOFFS}
    result["MRR"] = sum(1.0 / r for r in found if r is not None) / n
    return result


def held_out_table(split: dict[str, Any]) -> str:
    rows = []
    for label, key in (("chosen on the tuning half", "chosen_judged_held_out"),
                       ("shipped constants", "shipped_judged_held_out")):  # fmt: skip
        result = split[key]
        for kind, v in result["per_kind"].items():
            parts = split["parts_held_out"][kind]
            rows.append([
                label, "/".join(f"{c:g}" for c in result["cell"]), kind,
                f"{v['R@1']:.3f}", f"{v['MRR']:.3f}",
                f"{max(parts['vector']['R@1'], parts['keyword']['R@1']):.3f}",
                f"{max(parts['vector']['MRR'], parts['keyword']['MRR']):.3f}",
                "yes" if v["meets"] else "no",
            ])  # fmt: skip
    headers = ["constants", "weight/kw margin/vec margin", "kind", "hybrid R@1", "hybrid MRR",
               "better part R@1", "better part MRR", "goal met"]  # fmt: skip
    counts = split["queries"]
    return (
        markdown_table(headers, rows)
        + f"\n\n{counts['tune']} tuning / {counts['held_out']} held-out queries"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument(
        "--runtime",
        choices=["onnx-int8", "onnx", "torch"],
        default="onnx-int8",
        help="the local model's runtime (default: Headwater's default, onnx-int8)",
    )
    parser.add_argument(
        "--markdown", action="store_true", help="load each page as Markdown with headings"
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    corpus_file = args.out / "corpus.jsonl"
    if not corpus_file.is_file():
        from corpus import pages as man_pages

        with corpus_file.open("w", encoding="utf-8") as handle:
            for page in man_pages(args.docs):
                handle.write(json.dumps(page, ensure_ascii=False) + "\n")
    pages = [json.loads(line) for line in corpus_file.read_text(encoding="utf-8").splitlines()]
    queries = build(pages)

    from headwater.sinks.base import SinkContext
    from headwater.sinks.sqlite import SqliteSink

    embedder = CachedEmbedder(args.out / f"embeddings-{args.runtime}.npz", args.runtime)
    state = Path(tempfile.mkdtemp(prefix="hw-retrieval-"))
    started = time.perf_counter()
    try:
        sink = SqliteSink(
            SqliteSink.Options(), SinkContext("bench", state, embedder.model.dimension)
        )
        loaded = [as_markdown(p) for p in pages] if args.markdown else pages
        chunks = load(sink, loaded, embedder)
        by_kind: dict[str, list[Query]] = defaultdict(list)
        for query in queries:
            by_kind[query.kind].append(query)
        rows: list[dict[str, Any]] = []
        for kind, group in by_kind.items():
            for method, found in ranks(group, search_lists(sink, group, embedder)).items():
                rows.append(
                    {"kind": kind, "queries": len(group), "method": method, **metrics(found)}
                )
        split = held_out(queries, search_lists(sink, queries, embedder))
        sink.close()
    finally:
        shutil.rmtree(state, ignore_errors=True)
    headers = ["kind", "queries", "method", *(f"R@{c}" for c in CUTOFFS), "MRR"]
    table = markdown_table(
        headers,
        [
            [r["kind"], r["queries"], r["method"], *(f"{r[h]:.3f}" for h in headers[3:])]
            for r in rows
        ],
    )
    summary = (
        f"{len(pages)} pages{' as Markdown' if args.markdown else ''}, {chunks} chunks, "
        f"{len(queries)} queries, runtime {args.runtime}; "
        f"{embedder.embedded} texts embedded this run; {time.perf_counter() - started:.0f} s"
    )
    stem = f"results-{args.runtime}{'-markdown' if args.markdown else ''}"
    (args.out / f"{stem}.md").write_text(
        table + "\n\n" + held_out_table(split) + "\n\n" + summary + "\n", encoding="utf-8"
    )
    (args.out / f"{stem}.json").write_text(
        json.dumps({"rows": rows, "held_out": split}, indent=2), encoding="utf-8"
    )
    print(table)
    print("\nheld-out split of the fusion constants:\n" + held_out_table(split))
    print("\n" + summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
