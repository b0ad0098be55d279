"""ONNX batch shape: padded tokens per call and calls run at once, speed and peak RSS.

The idea: on a few CPU cores, long chunks embed fastest in small batches, and two small
batches run side by side on one session (one thread each) keep both cores busier than
one batch on two threads. Each setting runs in its own process (its own peak RSS) over
the same chunk texts: the first ``--docs`` Markdown documents of the bench corpus,
chunked by Headwater's chunker, shuffled with a fixed seed, the first ``--texts``.

    .venv/bin/python bench/corpus.py generate --out bench/out/corpus-2k --docs 2000 --seed 1
    PYTHONPATH=src .venv/bin/python bench/onnx_batches.py --corpus bench/out/corpus-2k
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

SETTINGS = [(1, 1024), (1, 512), (2, 1024), (2, 512), (2, 384)]  # (at once, tokens)


def texts(corpus: Path, docs: int, count: int) -> list[str]:
    from headwater.pipeline.chunk import ChunkerSettings, chunk_document
    from headwater.pipeline.embed.local import TokenizerCounter, bundled_model_dir
    from headwater.pipeline.parse import parse

    counter = TokenizerCounter(bundled_model_dir() / "tokenizer.json")
    found: list[str] = []
    for path in sorted((corpus / "docs").rglob("*.md"))[:docs]:
        parsed = parse(path.read_bytes(), name=path.name, media_type=None)
        chunks = chunk_document(
            document_id=path.name,
            pipeline_version="bench",
            text=parsed.text,
            title=parsed.title or path.stem,
            metadata={"path": path.name},
            counter=counter,
            settings=ChunkerSettings(),
        )
        found += [c.embed_text for c in chunks]
    random.Random(1).shuffle(found)
    return found[:count]


def one(args: argparse.Namespace) -> dict[str, float]:
    import headwater.pipeline.embed.onnx as onnx
    import headwater.pipeline.embed.onnx_session as onnx_session
    from headwater.pipeline.embed.local import bundled_model_dir

    sample = texts(args.corpus, args.docs, args.texts)
    prepared = onnx.OnnxEmbedder(runtime="onnx-int8").prepare()
    onnx_session.PARALLEL_BATCHES, onnx_session.BATCH_TOKENS = args.at_once, args.tokens
    session = onnx_session.OnnxSession(
        bundled_model_dir(),
        prepared.path,
        optimized_file=prepared.path.with_name(onnx_session.OPTIMIZED_FILE),
    )
    session.embed(sample[:32])
    started = time.perf_counter()
    for offset in range(0, len(sample), 300):  # about one index batch per call
        session.embed(sample[offset : offset + 300])
    elapsed = time.perf_counter() - started
    return {
        "at_once": args.at_once,
        "batch_tokens": args.tokens,
        "texts": len(sample),
        "chunks_per_s": round(len(sample) / elapsed, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=Path("bench/out/corpus-2k"))
    parser.add_argument("--docs", type=int, default=700)
    parser.add_argument("--texts", type=int, default=6000)
    parser.add_argument("--at-once", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--tokens", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.at_once:
        print(json.dumps(one(args)))
        return 0
    print("| batches at once | padded tokens a batch | texts | chunks/s | peak RSS MB |")
    print("| --- | --- | --- | --- | --- |")
    for at_once, tokens in SETTINGS:
        done = subprocess.run(
            [sys.executable, __file__, "--corpus", str(args.corpus), "--docs", str(args.docs),
             "--texts", str(args.texts), "--at-once", str(at_once), "--tokens", str(tokens)],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        row = json.loads(done.stdout.strip().splitlines()[-1])
        cells = [at_once, tokens, row["texts"], row["chunks_per_s"], row["peak_rss_mb"]]
        print("| " + " | ".join(str(cell) for cell in cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
