"""Vector search of the ``sqlite`` sink at up to 1M chunks × 384 dims: exact against approximate.

The idea: the approximate path (1-bit codes pick candidates, exact cosine ranks them) must
stay within reach of exact search in recall while staying under 100 ms at a million
chunks, for callers whose ACL lets them see different shares of the index. Vectors are
clustered like real embeddings (topics, subtopics inside them, noise; a document's chunks
share a subtopic), the ACL mix is ``sink_search.py``'s (10% public, 1% in ``narrow``, the
rest over 20 groups), and every row is written through ``SqliteSink.replace``, one
transaction per document, so the load time is the sink's real insert rate. Chunk text is
24 vocabulary words (keyword search is not measured here; ``sink_search.py`` does that).

Recall@10 is measured against exact brute force over the same vectors held in memory
(numpy), which the exact path matches; exact latency is timed on ``--exact-queries``.

    .venv/bin/python bench/ann_search.py --chunks 1000000 --keep /tmp/ann-1m \\
        --out bench/out/ann-search-1m.json
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import _VOCAB
from measure import markdown_table, percentile, write_json

DIMENSION = 384
CHUNKS_PER_DOC = 10
GROUPS = 20
TOPICS, SUBTOPICS = 200, 25  # 5,000 subtopics
NOISE = 1.5  # cosine ~0.47 within a subtopic, ~0.24 within a topic, ~0 across
BATCH_DOCS = 1000


class Space:
    """Clustered unit vectors: topic + subtopic centre + noise, normalized."""

    def __init__(self, seed: int, noise: float = NOISE) -> None:
        self.noise = noise
        rng = np.random.default_rng(seed)
        self.topics = rng.standard_normal((TOPICS, DIMENSION), np.float32)
        self.subs = rng.standard_normal((TOPICS * SUBTOPICS, DIMENSION), np.float32)

    def draw(self, rng: np.random.Generator, subtopics: np.ndarray) -> np.ndarray:
        noise = rng.standard_normal((len(subtopics), DIMENSION), np.float32)
        v = self.topics[subtopics // SUBTOPICS] + self.subs[subtopics] + self.noise * noise
        out: np.ndarray = v / np.linalg.norm(v, axis=1, keepdims=True)
        return out.astype(np.float32)


def bench_document_id(d: int) -> str:
    """Document ``d``'s id: 64 hex digits like a real one (a sha256), its number in both
    halves. A sink may key a document by the id's first 128 bits (qdrant's revision
    records do), which real ids keep distinct; ``f"{d:064x}"`` would not (all zeros)."""
    return f"{d:032x}" * 2


def document_number(document_id: str) -> int:
    """The ``d`` of ``bench_document_id(d)``."""
    return int(document_id[:32], 16)


def _groups(d: int, rng: random.Random) -> tuple[bool, tuple[str, ...]]:
    share = rng.random()
    if share < 0.10:
        return True, ()
    if share < 0.11:
        return False, ("narrow",)
    return False, (f"g{rng.randrange(GROUPS):02d}",)


def load(sink: Any, space: Space, chunks: int, seed: int) -> tuple[dict[str, Any], Any]:
    """Write ``chunks`` chunks; return timings and (vectors, per-chunk ACL labels)."""
    from headwater.identity import chunk_id
    from headwater.types import Access, Chunk, EmbeddedChunk, IndexDocument

    docs = chunks // CHUNKS_PER_DOC
    vectors = np.zeros((docs * CHUNKS_PER_DOC, DIMENSION), np.float32)
    labels = np.zeros(docs * CHUNKS_PER_DOC, np.int16)  # -1 public, 20 narrow, else group
    rng = random.Random(seed)
    words = _VOCAB[:400]
    started = time.perf_counter()
    for first in range(0, docs, BATCH_DOCS):
        count = min(BATCH_DOCS, docs - first)
        nrng = np.random.default_rng([seed, first])
        subs = np.repeat(nrng.integers(0, TOPICS * SUBTOPICS, count), CHUNKS_PER_DOC)
        block = space.draw(nrng, subs)
        vectors[first * CHUNKS_PER_DOC : (first + count) * CHUNKS_PER_DOC] = block
        for d in range(first, first + count):
            public, groups = _groups(d, rng)
            label = -1 if public else (20 if groups == ("narrow",) else int(groups[0][1:]))
            labels[d * CHUNKS_PER_DOC : (d + 1) * CHUNKS_PER_DOC] = label
            document_id = bench_document_id(d)
            access = Access(public=public, groups=groups)
            document = IndexDocument(document_id, "bench", f"doc {d}", f"bench/{d}", access)
            items = []
            for o in range(CHUNKS_PER_DOC):
                text = " ".join(rng.choices(words, k=24))
                chunk = Chunk(chunk_id(document_id, "bench-1", o), document_id, o, text, text)
                row = block[(d - first) * CHUNKS_PER_DOC + o]
                items.append(EmbeddedChunk(chunk, row.tolist()))
            sink.replace(document, items, 1)
        done = (first + count) * CHUNKS_PER_DOC
        if done % 100_000 == 0 or first + count == docs:
            rate = done / (time.perf_counter() - started)
            print(f"loaded {done:,} chunks ({rate:,.0f}/s)", file=sys.stderr, flush=True)
    elapsed = time.perf_counter() - started
    loaded = {
        "documents": docs,
        "chunks": docs * CHUNKS_PER_DOC,
        "load_s": round(elapsed, 1),
        "chunks_per_s": round(docs * CHUNKS_PER_DOC / elapsed),
    }
    return loaded, (vectors, labels)


def regenerate(space: Space, chunks: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The vectors and labels ``load`` wrote, without writing (for a kept index)."""
    docs = chunks // CHUNKS_PER_DOC
    vectors = np.zeros((docs * CHUNKS_PER_DOC, DIMENSION), np.float32)
    labels = np.zeros(docs * CHUNKS_PER_DOC, np.int16)
    rng = random.Random(seed)
    for first in range(0, docs, BATCH_DOCS):
        count = min(BATCH_DOCS, docs - first)
        nrng = np.random.default_rng([seed, first])
        subs = np.repeat(nrng.integers(0, TOPICS * SUBTOPICS, count), CHUNKS_PER_DOC)
        vectors[first * CHUNKS_PER_DOC : (first + count) * CHUNKS_PER_DOC] = space.draw(nrng, subs)
        for d in range(first, first + count):
            public, groups = _groups(d, rng)
            label = -1 if public else (20 if groups == ("narrow",) else int(groups[0][1:]))
            labels[d * CHUNKS_PER_DOC : (d + 1) * CHUNKS_PER_DOC] = label
            rng.choices(_VOCAB[:400], k=24 * CHUNKS_PER_DOC)  # keep the stream aligned
    return vectors, labels


CALLERS: dict[str, tuple[bool, tuple[str, ...]]] = {
    "broad (2 groups + public, ~19%)": (True, ("g03", "g11")),
    "narrow (1 group + public, ~11%)": (True, ("narrow",)),
    "one group, no public (~1%)": (False, ("narrow",)),
    "everyone (all groups, 100%)": (True, (*(f"g{i:02d}" for i in range(GROUPS)), "narrow")),
}


def _mask(labels: np.ndarray, public: bool, groups: tuple[str, ...]) -> np.ndarray:
    seen = ([-1] if public else []) + [20 if g == "narrow" else int(g[1:]) for g in groups]
    return np.isin(labels, seen)


def measure(paths: dict[str, Any], data: Any, args: argparse.Namespace) -> list[dict[str, Any]]:
    from headwater.sinks.base import SearchRequest
    from headwater.types import SearchMode, caller_principals, group_principal

    vectors, labels = data
    space = paths["space"]
    qrng = np.random.default_rng(args.seed + 99)
    queries = space.draw(qrng, qrng.integers(0, TOPICS * SUBTOPICS, args.queries))
    results = []
    for caller, (public, groups) in CALLERS.items():
        principals = [group_principal(g) for g in groups]
        if public:
            principals = caller_principals("a@x.example", list(groups))
        seen = _mask(labels, public, groups)
        visible = np.flatnonzero(seen)
        for kind, sink in (("approximate", paths["ann"]), ("exact", paths["exact"])):
            n = args.queries if kind == "approximate" else args.exact_queries
            if n == 0 or sink is None:
                continue
            timings: list[float] = []
            answers: list[set[int]] = []
            for q in queries[:n]:
                request = SearchRequest(
                    text="", vector=q.tolist(), principals=principals, k=10, mode=SearchMode.VECTOR
                )
                started = time.perf_counter()
                hits = sink.search(request)
                timings.append((time.perf_counter() - started) * 1000)
                answers.append(
                    {document_number(h.document_id) * CHUNKS_PER_DOC + h.ordinal for h in hits}
                )
            # Ground truth after the timed loop: numpy's BLAS threads would compete with it.
            recalls: list[float] = []
            for q, got in zip(queries[:n], answers, strict=True):
                scores = vectors @ q
                scores[~seen] = -np.inf
                top = np.argpartition(-scores, 10)[:10]
                recalls.append(len(got & set(top.tolist())) / 10)
            results.append(
                {
                    "caller": caller,
                    "visible_chunks": len(visible),
                    "search": kind,
                    "queries": n,
                    "p50_ms": round(percentile(timings, 50), 1),
                    "p95_ms": round(percentile(timings, 95), 1),
                    "recall_at_10": round(float(np.mean(recalls)), 4),
                    "min_recall": round(float(np.min(recalls)), 2),
                }
            )
            print(results[-1], file=sys.stderr, flush=True)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--exact-queries", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--noise", type=float, default=NOISE, help="higher: weaker clusters (2.5: cosine ~0.24)"
    )
    parser.add_argument("--keep", type=Path, required=True, help="index directory (reused)")
    parser.add_argument("--exact-below", type=int, help="the sink option (default: its own)")
    parser.add_argument("--candidates", type=int, help="the sink option (default: its own)")
    parser.add_argument("--out", type=Path, default=Path("bench/out/ann-search.json"))
    args = parser.parse_args()

    from headwater.sinks.base import SinkContext
    from headwater.sinks.sqlite import SqliteSink

    context = SinkContext(name="bench", state_dir=args.keep, dimension=DIMENSION)
    space = Space(args.seed, args.noise)
    reuse = (args.keep / "index-bench.db").exists()
    tuned = {"exact_below": args.exact_below, "candidates": args.candidates}
    ann = SqliteSink(
        SqliteSink.Options(**{k: v for k, v in tuned.items() if v is not None}), context
    )
    if reuse:
        loaded: dict[str, Any] = {"chunks": args.chunks, "reused": str(args.keep)}
        data: Any = regenerate(space, args.chunks, args.seed)
    else:
        loaded, data = load(ann, space, args.chunks, args.seed)
    exact = SqliteSink(SqliteSink.Options(exact_below=10**12), context)
    size_mb = sum(p.stat().st_size for p in args.keep.glob("index-bench.db*")) / 1e6
    started = time.perf_counter()
    ann._caches.codes().refresh(ann._db)
    cold_ms = (time.perf_counter() - started) * 1000
    rows = measure({"ann": ann, "exact": exact, "space": space}, data, args)
    ann.close()
    exact.close()
    report = {
        "what": "sqlite sink vector search, exact vs approximate (1-bit codes + exact rescoring)",
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "machine": {"cores": os.cpu_count(), "load_at_end": round(os.getloadavg()[0], 2)},
        "index_mb": round(size_mb, 1),
        "code_cache_cold_load_ms": round(cold_ms, 1),
        "noise": args.noise,
        "options": {"exact_below": ann.options.exact_below, "candidates": ann.options.candidates},
        **loaded,
        "results": rows,
    }
    write_json(args.out, report)
    print(
        markdown_table(
            ["caller", "visible", "search", "p50 ms", "p95 ms", "recall@10"],
            [
                [r[key] for key in ("caller", "visible_chunks", "search", "p50_ms", "p95_ms")]
                + [r["recall_at_10"]]
                for r in rows
            ],
        )
    )
    print(f"\nindex {size_mb:,.0f} MB; {loaded}; wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
