"""Embedding runtimes side by side: torch, ONNX fp32 and ONNX int8 on the bundled model.

The idea: the same few hundred chunk-sized texts (deterministic, drawn from the shipped
gate sample and held-out sentences), batch 32, length-sorted, each runtime warmed up once
and then timed; cosine to torch per text; the install size of each runtime's packages;
and, given a workspace, the cold ``headwater search`` latency (process start to printed
results, each run a fresh process). Prints one JSON object.

    HF_HUB_OFFLINE=1 HEADWATER_CACHE_DIR=/tmp/hw-cache \\
        .venv/bin/python bench/embed_runtimes.py --texts 300 [--workspace DIR --runs 5]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from headwater.pipeline.embed.local import LocalEmbedder
from headwater.pipeline.embed.onnx import OnnxEmbedder
from headwater.pipeline.embed.onnx_prepare import quality_sample


def chunk_texts(count: int, seed: int = 7) -> list[str]:
    """``count`` texts of 1-12 sentences each (about 10-250 tokens), deterministic."""
    sentences = [s for text in quality_sample() for s in text.split(". ") if len(s) > 12]
    rng = random.Random(seed)
    return [". ".join(rng.choices(sentences, k=rng.randint(1, 12))) + "." for _ in range(count)]


def throughput(embed: Any, texts: list[str], batch: int) -> tuple[float, np.ndarray]:
    embed(texts[:batch])  # warm-up: load, first allocation
    start = time.perf_counter()
    vectors = np.asarray(embed(texts))
    return len(texts) / (time.perf_counter() - start), vectors


def install_mb(*packages: str) -> float:
    total = 0
    for package in packages:
        try:
            dist = metadata.distribution(package)
        except metadata.PackageNotFoundError:
            continue
        for file in dist.files or []:
            path = Path(str(dist.locate_file(file)))
            if path.is_file():
                total += path.stat().st_size
    return round(total / 1e6, 1)


def cold_search(workspace: Path, runs: int, query: str) -> dict[str, float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "headwater", "search", query, "--k", "5"],
            cwd=workspace,
            check=True,
            capture_output=True,
        )
        times.append(time.perf_counter() - start)
    return {"min_s": round(min(times), 3), "median_s": round(statistics.median(times), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=300)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--runtimes", default="torch,onnx,onnx-int8")
    parser.add_argument("--workspace", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--query", default="how do I reset my password")
    args = parser.parse_args()
    texts = chunk_texts(args.texts)
    report: dict[str, Any] = {"texts": len(texts), "batch": args.batch, "runtimes": {}}
    reference: np.ndarray | None = None
    for runtime in args.runtimes.split(","):
        if runtime == "torch":
            embedder: Any = LocalEmbedder(batch_size=args.batch)
        else:
            embedder = OnnxEmbedder(runtime=runtime, batch_size=args.batch)
            embedder.prepare()
        rate, vectors = throughput(embedder.embed, texts, args.batch)
        entry: dict[str, Any] = {"texts_per_s": round(rate, 1)}
        if runtime == "torch":
            reference = vectors
        elif reference is not None:
            cosines = np.sum(vectors * reference, axis=1)
            entry["cosine_to_torch"] = {
                "mean": round(float(cosines.mean()), 4),
                "min": round(float(cosines.min()), 4),
            }
        report["runtimes"][runtime] = entry
    report["install_mb"] = {
        "onnxruntime": install_mb("onnxruntime"),
        "onnx+onnxscript (export only)": install_mb("onnx", "onnxscript"),
        "torch": install_mb("torch"),
        "sentence-transformers+transformers": install_mb("sentence-transformers", "transformers"),
    }
    if args.workspace is not None:
        report["cold_search"] = cold_search(args.workspace, args.runs, args.query)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
