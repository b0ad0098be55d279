"""Rebuild benchmark: change the embedding model and rebuild, while searches go on.

The idea: a rebuild should cost about what the model alone costs on the same chunks, and
searches served by the live generation should stay fast while it runs. Steps, in one
process through the Python API on a generated corpus (``bench/corpus.py``):

1. sync the corpus with the fast ``fake`` embedder (generation 1);
2. ``search_idle``: p50/p95 of keyword and hybrid searches on generation 1;
3. switch the config to the real model (``[embedder] type = "local"``) and run
   ``rebuild`` (generation 2, from the content store) while a thread keeps searching
   generation 1 (``search_during``);
4. ``model``: the model alone (the cache's inner embedder, same batch size) on the same
   chunk texts; ``fraction`` = rebuild chunks/s over model-alone chunks/s.

    .venv/bin/python bench/rebuild.py --corpus bench/out/corpus-2k
    .venv/bin/python bench/rebuild.py --corpus bench/out/corpus-2k --docs 200   # a subset

``--model-sample N`` (default 4,000) times the model alone on a fixed random sample of the
chunks, as ``bench/run.py`` does; 0 times every chunk (doubles the run).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import threading
import time
from pathlib import Path
from typing import Any

PACE_S = 0.05
QUERIES = ["policy review", "network budget", "energy model", "customer contract", "risk"]


def _config(work: Path, docs: Path, embedder: str) -> Path:
    config = work / "headwater.toml"
    config.write_text(
        '[workspace]\ntenant = "bench"\nstate_dir = "state"\n'
        f"{embedder}"
        '[[index]]\nname = "main"\ntype = "sqlite"\n'
        f'[[source]]\nid = "docs"\ntype = "filesystem"\nroot = "{docs}"\n'
        "access = { public = true }\n",
        encoding="utf-8",
    )
    return config


def _latencies(ws: Any, stop: threading.Event | None, rounds: int) -> list[float]:
    out: list[float] = []
    i = 0
    while (stop is None and i < rounds) or (stop is not None and not stop.is_set()):
        query = QUERIES[i % len(QUERIES)]
        started = time.perf_counter()
        ws.search(query, mode="keyword" if i % 2 else "hybrid", k=10)
        out.append((time.perf_counter() - started) * 1000)
        i += 1
        if stop is not None:
            time.sleep(PACE_S)  # a steady trickle of users, not a load test
    return out


def _summary(ms: list[float]) -> dict[str, float | int]:
    ordered = sorted(ms)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] if ordered else 0.0
    return {
        "n": len(ms),
        "p50_ms": round(statistics.median(ms), 2) if ms else 0.0,
        "p95_ms": round(p95, 2),
    }


def _subset(corpus: Path, work: Path, docs: int) -> Path:
    files = sorted((corpus / "docs").rglob("*.*"))
    if docs <= 0 or docs >= len(files):
        return corpus / "docs"
    target = work / "docs"
    for path in files[:docs]:
        dest = target / path.relative_to(corpus / "docs")
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--docs", type=int, default=0, help="Only the first N files (0: all).")
    parser.add_argument("--work", type=Path, default=Path("bench/out/rebuild-work"))
    parser.add_argument("--out", type=Path, default=Path("bench/out/rebuild.json"))
    parser.add_argument(
        "--model-sample",
        type=int,
        default=4000,
        help="Time the model alone on a fixed random sample of this many chunks (0: all).",
    )
    args = parser.parse_args()
    args.corpus, args.work = args.corpus.resolve(), args.work.resolve()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from headwater import Workspace
    from headwater.pipeline.chunk import chunk_document
    from headwater.rebuilds import orchestrate as core

    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    docs = _subset(args.corpus, args.work, args.docs)
    fake = '[embedder]\ntype = "fake"\ndimension = 384\nmax_tokens = 256\n'
    result: dict[str, Any] = {
        "corpus": str(args.corpus),
        "docs": args.docs or "all",
        "load_before": os.getloadavg(),
    }
    with Workspace.open(_config(args.work, docs, fake)) as ws:
        started = time.perf_counter()
        synced = ws.sync()
        result["initial_sync_s"] = round(time.perf_counter() - started, 2)
        result["documents"] = sum(r.counts.new for r in synced.runs)
        result["search_idle"] = _summary(_latencies(ws, None, 100))
    config = _config(args.work, docs, '[embedder]\ntype = "local"\n')
    with Workspace.open(config) as ws, Workspace.open(config) as searcher:
        stop = threading.Event()
        during: list[float] = []
        thread = threading.Thread(target=lambda: during.extend(_latencies(searcher, stop, 0)))
        thread.start()
        started = time.perf_counter()
        try:
            built = core.rebuild(ws.runtime)["indexes"][0]
        finally:
            stop.set()
            thread.join()
        elapsed = time.perf_counter() - started
        chunks = built["index_report"]["chunks"]["written"]
        result["rebuild"] = {
            "result": built["result"],
            "seconds": round(elapsed, 2),
            "chunks": chunks,
            "chunks_per_s": round(chunks / elapsed, 2),
        }
        result["search_during"] = _summary(during)
        texts = []
        after = ""
        while True:
            records = ws.manifest.documents_after(after, 500)
            if not records:
                break
            after = records[-1].document_id
            for r in records:
                if r.state == "active" and r.checksum:
                    texts.extend(
                        c.embed_text
                        for c in chunk_document(
                            document_id=r.document_id,
                            pipeline_version=ws.chunking_version,
                            text=ws.content_store.get(r.checksum),
                            title=r.title,
                            metadata=r.metadata,
                            counter=ws.embedder,
                            settings=ws.chunker,
                        )
                    )
        if 0 < args.model_sample < len(texts):
            texts = random.Random(1).sample(texts, args.model_sample)
        inner = getattr(ws.embedder, "inner", ws.embedder)
        inner.embed(texts[:32])  # warm up
        started = time.perf_counter()
        for start in range(0, len(texts), 32):
            inner.embed(texts[start : start + 32])
        model_s = time.perf_counter() - started
        result["model"] = {"chunks": len(texts), "chunks_per_s": round(len(texts) / model_s, 2)}
        result["fraction_of_model"] = round(
            result["rebuild"]["chunks_per_s"] / result["model"]["chunks_per_s"], 3
        )
    result["load_after"] = os.getloadavg()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
