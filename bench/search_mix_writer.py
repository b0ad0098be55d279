"""The writer ``search_mix.py --writes-per-s`` starts: rewrites one document of the sqlite
index ``rate`` times a second (ten chunks of the bench's words, a newer revision each time)
until its stdin closes.

    python bench/search_mix_writer.py WORKSPACE/.headwater RATE
"""

from __future__ import annotations

import random
import select
import sqlite3
import sys
import time
from pathlib import Path

from headwater.sinks.base import SinkContext
from headwater.sinks.sqlite import SqliteOptions, SqliteSink
from headwater.sinks.testing import make_chunks, make_document
from headwater.types import Access

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import _VOCAB


def main() -> int:
    state, rate = Path(sys.argv[1]), float(sys.argv[2])
    index = state / "index-main.db"
    with sqlite3.connect(index) as db:
        dimension = int(db.execute("SELECT value FROM meta WHERE key = 'dimension'").fetchone()[0])
    sink = SqliteSink(
        SqliteOptions(), SinkContext(name="main", state_dir=state, dimension=dimension)
    )
    rng = random.Random(1)
    document = make_document("search-mix-writer", Access(public=True))
    try:
        while not select.select([sys.stdin], [], [], 1.0 / rate)[0]:
            revision = time.time_ns() // 1000  # newer than any run's before
            texts = [" ".join(rng.choices(_VOCAB[:400], k=100)) for _ in range(10)]
            vectors = [[rng.gauss(0.0, 1.0) for _ in range(dimension)] for _ in texts]
            sink.replace(document, make_chunks(document, texts, vectors), revision)
    finally:
        sink.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
