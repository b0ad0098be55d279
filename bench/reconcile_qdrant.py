"""Time `headwater reconcile --json` on a qdrant index in local mode.

Builds (once) a workspace in DIR with N small Markdown documents (a few chunks each),
the fake embedder and one `qdrant` index in local mode, syncs it, then runs
`headwater reconcile --json` RUNS times in fresh processes and prints each wall time
and the report's `checked` and `in_sync`. The Headwater under test is the one on
PYTHONPATH, so the same workspace can be timed with two checkouts.

    PYTHONPATH=src .venv/bin/python bench/reconcile_qdrant.py --dir /tmp/rq --docs 2000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

CONFIG = """\
[workspace]
tenant = "bench"

[embedder]
type = "fake"

[[source]]
id = "docs"
type = "filesystem"
root = "docs"
access = { public = true }

[[index]]
name = "main"
type = "qdrant"
"""


def headwater(directory: Path, *args: str) -> tuple[float, str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "headwater", *args],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return time.perf_counter() - started, done.stdout


def build(directory: Path, docs: int, words: int) -> None:
    if (directory / "headwater.toml").exists():
        return
    for i in range(docs):
        folder = directory / "docs" / f"s{i // 500:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        body = " ".join(f"word{(i * 7 + j) % 997}" for j in range(words))
        (folder / f"doc-{i:06d}.md").write_text(f"# Document {i}\n\n{body}\n")
    (directory / "headwater.toml").write_text(CONFIG)
    took, out = headwater(directory, "sync", "--json")
    index = json.loads(out)["index"]
    print(f"built {docs} documents, {index['chunks']['written']} chunks in {took:.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--words", type=int, default=400, help="words per document")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    build(args.dir, args.docs, args.words)
    for _ in range(args.runs):
        took, out = headwater(args.dir, "reconcile", "--json")
        main_index = json.loads(out)["sinks"]["main"]
        print(
            f"reconcile --json: {took:.2f} s, checked {main_index['checked']}, "
            f"in_sync {main_index['in_sync']}"
        )
    took, _ = headwater(args.dir, "status", "--json")
    print(f"status --json (process start and workspace open): {took:.2f} s")


if __name__ == "__main__":
    main()
