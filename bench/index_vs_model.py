"""Indexing beside the model alone, in one process: the ONNX calls each makes, and time.

The idea: ``bench/run.py``'s "÷ model" divides an initial sync by the model alone timed
in another process at another moment; on a shared machine the load between the two moves
the ratio more than anything the indexer does. Here both run in one process, one after
the other, over the same chunks of a workspace synced with ``--no-index``:

- ``calls``: every ONNX Runtime call counted (``OnnxSession._run``, in every thread:
  cProfile sees only its own) with its texts and padded tokens, for the indexer's way
  of feeding the model (``Preparer._embed_in_slices`` on each batch of 32 documents)
  and for the model alone (512 texts a call, as ``bench/run.py``), alternately;
- ``pair``: ``headwater index`` (the CLI's ``main``, in-process) on a fresh copy of the
  workspace, then the model alone on its chunk texts, wall and CPU seconds of each.

    .venv/bin/python bench/corpus.py generate --out bench/out/corpus-100 --docs 100 --seed 1
    # a copy with bench/run.py's headwater.toml, synced by `headwater sync --no-index`
    PYTHONPATH=src .venv/bin/python bench/index_vs_model.py prepare bench/out/idx-100 \
        --corpus bench/out/corpus-100
    PYTHONPATH=src nice .venv/bin/python bench/index_vs_model.py calls bench/out/idx-100
    PYTHONPATH=src nice .venv/bin/python bench/index_vs_model.py pair bench/out/idx-100
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import headwater_bin, iter_chunks, open_workspace, write_config


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _texts_by_batch(ws: Any) -> list[list[str]]:
    """The workspace's chunk texts, in batches of 32 documents as the indexer takes them."""
    docs: dict[str, list[str]] = {}
    for doc, chunk in iter_chunks(ws):
        docs.setdefault(doc.document_id, []).append(chunk.embed_text)
    ids = list(docs)
    return [[t for d in ids[i : i + 32] for t in docs[d]] for i in range(0, len(ids), 32)]


def calls(work: Path, rounds: int) -> None:
    import headwater.pipeline.embed.onnx_session as session_module

    counted = {"calls": 0, "texts": 0, "padded": 0, "tokens": 0}
    run = session_module.OnnxSession._run

    def counting(self: Any, rows: list[list[int]]) -> Any:
        counted["calls"] += 1
        counted["texts"] += len(rows)
        counted["padded"] += len(rows) * max(len(r) for r in rows)
        counted["tokens"] += sum(len(r) for r in rows)
        return run(self, rows)

    session_module.OnnxSession._run = counting  # type: ignore[method-assign]
    with open_workspace(work) as ws:
        _calls(ws, _texts_by_batch(ws), counted, rounds)


def _calls(ws: Any, batches: list[list[str]], counted: dict[str, int], rounds: int) -> None:
    from headwater.indexer import prepare
    from headwater.retry import RetryPolicy

    inner = getattr(ws.embedder, "inner", ws.embedder)
    texts = [t for batch in batches for t in batch]
    inner.embed(texts[:32])  # load and warm up

    def indexer() -> None:
        for batch in batches:  # the preparer's slices, with the chunker's ids if it gives them
            preparer = prepare.Preparer(
                ws.content_store, lambda: inner, "bench", ws.chunker, RetryPolicy(attempts=1),
                fail=lambda *a: None, superseded=lambda d: False,
            )  # fmt: skip
            ids = getattr(inner, "token_ids_batch", None)
            if ids is not None and hasattr(preparer, "_ids"):
                preparer._ids = dict(zip(batch, ids(batch), strict=True))
            preparer._embed_in_slices(batch)

    def alone() -> None:
        for at in range(0, len(texts), 512):
            inner.embed(texts[at : at + 512])

    for _ in range(rounds):
        for name, path in (("indexer", indexer), ("model alone", alone)):
            counted.update(dict.fromkeys(counted, 0))
            load, started, cpu = os.getloadavg()[0], time.perf_counter(), cpu_s()
            path()
            wall = time.perf_counter() - started
            print(json.dumps({
                "path": name, "chunks": len(texts), "s": round(wall, 2),
                "cpu_s": round(cpu_s() - cpu, 1), "chunks_per_call":
                round(counted["texts"] / counted["calls"], 2), **counted,
                "load": [round(load, 2), round(os.getloadavg()[0], 2)],
            }), flush=True)  # fmt: skip


def pair(clean: Path, out: Path, rounds: int) -> None:
    from headwater.cli.app import main

    home = Path.cwd()
    for n in range(rounds):
        work = out / f"pair-{n}"
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(clean, work)
        os.chdir(work)
        sys.argv = ["headwater", "index", "--json"]
        load, started, cpu = os.getloadavg()[0], time.perf_counter(), cpu_s()
        with contextlib.redirect_stdout(io.StringIO()) as printed, contextlib.suppress(SystemExit):
            main()
        index_s, index_cpu = time.perf_counter() - started, cpu_s() - cpu
        chunks = json.loads(printed.getvalue())["chunks"]["written"]
        os.chdir(home)
        with open_workspace(work) as ws:
            texts = [chunk.embed_text for _, chunk in iter_chunks(ws)]
            inner = getattr(ws.embedder, "inner", ws.embedder)
            inner.embed(texts[:32])  # load and warm up, as bench/run.py
            started, cpu = time.perf_counter(), cpu_s()
            for at in range(0, len(texts), 512):
                inner.embed(texts[at : at + 512])
            model_s, model_cpu = time.perf_counter() - started, cpu_s() - cpu
        print(json.dumps({
            "round": n, "chunks": chunks, "index_s": round(index_s, 2),
            "index_cpu_s": round(index_cpu, 1), "model_s": round(model_s, 2),
            "model_cpu_s": round(model_cpu, 1),
            "ratio": round((chunks / index_s) / (len(texts) / model_s), 3),
            "load": [round(load, 2), round(os.getloadavg()[0], 2)],
        }), flush=True)  # fmt: skip


def prepare_workspace(work: Path, corpus: Path) -> None:
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(corpus, work)
    write_config(work, "local", 32)
    subprocess.run([headwater_bin(), "sync", "--no-index", "--json"], cwd=work, check=True,
                   stdout=subprocess.DEVNULL)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["prepare", "calls", "pair"])
    parser.add_argument("work", type=Path, help="a workspace synced with --no-index")
    parser.add_argument("--corpus", type=Path, help="prepare: the corpus to copy")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "out")
    args = parser.parse_args()
    if args.command == "prepare":
        prepare_workspace(args.work, args.corpus)
    elif args.command == "calls":
        calls(args.work.resolve(), args.rounds)
    else:
        pair(args.work.resolve(), args.out.resolve() / "index-vs-model", args.rounds)


if __name__ == "__main__":
    main()
