"""Search latency of the ``sqlite`` sink alone at 100,000 chunks, with ACL filters.

The idea: search latency should not need a 100k-chunk corpus to be embedded first, so this
loads the sink directly (``headwater.sinks.sqlite.SqliteSink``) with synthetic unit vectors
and prose from the benchmark vocabulary, then times vector, keyword and hybrid searches
for callers whose groups see different shares of the index (a broad caller sees about 19%
of the chunks, a narrow one about 1%: a filter that selective is where post-filtered
vector search starves). Writes go through the sink's own ``replace`` (one transaction per
document), so the load time is reported too.

    .venv/bin/python bench/sink_search.py --chunks 100000 --out bench/out/sink-search.json
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import _TOPIC_TERMS, _VOCAB, TOPICS
from measure import markdown_table, percentile, write_json

DIMENSION = 384
CHUNKS_PER_DOC = 10
GROUPS = 20  # documents are spread over g00..g19, and 10% are public


def _text(rng: random.Random, topic: int) -> str:
    words = rng.choices(_VOCAB[:400], k=rng.randint(80, 180))
    for _ in range(6):
        words[rng.randrange(len(words))] = rng.choice(_TOPIC_TERMS[topic])
    return " ".join(words)


def load(sink: Any, chunks: int, seed: int) -> dict[str, Any]:
    from headwater.identity import chunk_id
    from headwater.types import Access, Chunk, EmbeddedChunk, IndexDocument

    rng = random.Random(seed)
    vectors = np.random.default_rng(seed).standard_normal((chunks, DIMENSION), np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    docs = chunks // CHUNKS_PER_DOC
    started = time.perf_counter()
    for d in range(docs):
        document_id = f"{d:032x}" * 2  # like a real id: distinct in its first 128 bits too
        share = rng.random()
        if share < 0.10:
            access = Access(public=True)
        elif share < 0.11:
            access = Access(groups=("narrow",))  # 1% of documents
        else:
            access = Access(groups=(f"g{rng.randrange(GROUPS):02d}",))
        topic = rng.randrange(TOPICS)
        document = IndexDocument(document_id, "bench", f"doc {d}", f"bench/{d}", access)
        items = []
        for o in range(CHUNKS_PER_DOC):
            text = _text(rng, topic)
            chunk = Chunk(chunk_id(document_id, "bench-1", o), document_id, o, text, text)
            items.append(EmbeddedChunk(chunk, vectors[d * CHUNKS_PER_DOC + o].tolist()))
        sink.replace(document, items, 1)
    elapsed = time.perf_counter() - started
    return {"documents": docs, "chunks": docs * CHUNKS_PER_DOC, "load_s": round(elapsed, 2)}


def measure(sink: Any, queries: int, seed: int) -> list[dict[str, Any]]:
    from headwater.sinks.base import SearchRequest
    from headwater.types import SearchMode, caller_principals

    callers = {
        "broad (2 groups + public, ~19%)": caller_principals("a@x.example", ["g03", "g11"]),
        "narrow (1 group, ~1%)": caller_principals("b@x.example", ["narrow"]),
    }
    rng = random.Random(seed)
    results = []
    for caller, principals in callers.items():
        for mode in (SearchMode.VECTOR, SearchMode.KEYWORD, SearchMode.HYBRID):
            timings: list[float] = []
            returned = 0
            for _ in range(queries):
                topic = rng.randrange(TOPICS)
                text = " ".join([rng.choice(_TOPIC_TERMS[topic]), *rng.sample(_VOCAB[130:400], 2)])
                vector = np.asarray([rng.gauss(0, 1) for _ in range(DIMENSION)], np.float32)
                vector /= np.linalg.norm(vector)
                request = SearchRequest(
                    text=text,
                    vector=None if mode is SearchMode.KEYWORD else vector.tolist(),
                    principals=principals,
                    k=10,
                    mode=mode,
                )
                started = time.perf_counter()
                hits = sink.search(request)
                timings.append((time.perf_counter() - started) * 1000)
                returned += len(hits)
            results.append(
                {
                    "caller": caller,
                    "mode": mode.value,
                    "queries": queries,
                    "p50_ms": round(percentile(timings, 50), 2),
                    "p95_ms": round(percentile(timings, 95), 2),
                    "mean_hits": round(returned / queries, 2),
                }
            )
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("bench/out/sink-search.json"))
    parser.add_argument("--keep", type=Path, help="build the index here and keep it")
    args = parser.parse_args()

    from headwater.sinks.base import SinkContext
    from headwater.sinks.sqlite import SqliteSink

    state = args.keep or Path(tempfile.mkdtemp(prefix="hw-sink-bench-"))
    try:
        sink = SqliteSink(
            SqliteSink.Options(), SinkContext(name="bench", state_dir=state, dimension=DIMENSION)
        )
        loaded = load(sink, args.chunks, args.seed)
        print(f"loaded {loaded}", file=sys.stderr, flush=True)
        rows = measure(sink, args.queries, args.seed)
        sink.close()
        size_mb = sum(p.stat().st_size for p in state.glob("*")) / 1e6
    finally:
        if args.keep is None:
            shutil.rmtree(state, ignore_errors=True)
    report = {
        "what": "sqlite sink search latency, synthetic vectors",
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "machine": {"cores": os.cpu_count(), "load_at_end": round(os.getloadavg()[0], 2)},
        "driver": getattr(sink, "driver", None),
        "index_mb": round(size_mb, 1),
        **loaded,
        "results": rows,
    }
    write_json(args.out, report)
    print(
        markdown_table(
            ["caller", "mode", "p50 ms", "p95 ms", "mean hits"],
            [[r["caller"], r["mode"], r["p50_ms"], r["p95_ms"], r["mean_hits"]] for r in rows],
        )
    )
    print(f"\n{loaded['chunks']:,} chunks, loaded in {loaded['load_s']} s; wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
