"""The write half of an initial sync: a filesystem source of small Markdown files synced
without indexing (read, parse, content store, manifest), fake embedder, SQLite manifest.
Prints docs/s per run. Runs against any checkout through ``PYTHONPATH``, so two commits
can be compared in one sitting, interleaved (issue 29 goal 2: content-store writes
batched, not one fsync after another):

    PYTHONPATH=src .venv/bin/python bench/sync_write.py --docs 1000 --runs 3
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from headwater import Workspace
from workspace_helpers import filesystem_source, write_config


def make_corpus(root: Path, docs: int) -> None:
    for i in range(docs):
        folder = root / f"d{i % 20}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i}.md").write_text(f"# Doc {i}\n\n" + f"word{i} " * 50, encoding="utf-8")


def one_run(corpus: Path, work: Path) -> float:
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    config = write_config(work, manifest_url=None, sources=filesystem_source(corpus))
    with Workspace.open(config) as ws:
        started = time.perf_counter()
        run = ws.sync(index=False).runs[0]
        seconds = time.perf_counter() - started
    assert run.counts.new == sum(1 for _ in corpus.rglob("*.md")), run.counts
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hw-sync-write-") as tmp:
        corpus = Path(tmp) / "corpus"
        make_corpus(corpus, args.docs)
        seconds = [one_run(corpus, Path(tmp) / "work") for _ in range(args.runs)]
    rates = [round(args.docs / s, 1) for s in seconds]
    rounded = [round(s, 2) for s in seconds]
    print(json.dumps({"docs": args.docs, "seconds": rounded, "docs_s": rates}))


if __name__ == "__main__":
    main()
