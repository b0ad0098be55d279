"""Peak memory of reconcile against corpus size: the merge over sorted streams stays flat.

For each size N it builds, in a scratch directory, a SQLite manifest with N synthetic
active documents (each applied to index ``main`` with 2 chunks) and a sqlite index
holding the same N documents (rows written straight into its tables: reconcile reads
only the documents and chunks tables, so no vectors are needed). It then runs
reconcile's ``compare`` in a fresh process and reports that process's peak RSS and
the peak of Python allocations during the compare (tracemalloc), next to the same
for holding the whole inventory in a dict (what reconcile did before it streamed).

    PYTHONPATH=src .venv/bin/python bench/reconcile_memory.py 10000 200000
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path

BATCH = 5000


def _doc_id(n: int) -> str:
    return hashlib.sha256(f"bench:{n}".encode()).hexdigest()


def build(directory: Path, size: int) -> None:
    from sqlalchemy import insert

    from headwater.manifest import schema as t
    from headwater.manifest.store import Manifest
    from headwater.sinks.sqlite import SqliteOptions, SqliteSink
    from headwater.sinks.testing import sink_context

    now = datetime.now(UTC)
    manifest = Manifest.open(f"sqlite:///{directory / 'manifest.db'}")
    sink = SqliteSink(SqliteOptions(), sink_context(directory, name="main"))
    with manifest.engine.begin() as conn:
        conn.execute(insert(t.sources).values(source_id="bench", type="bench", created_at=now))
    chunk_no = 0
    for start in range(0, size, BATCH):
        ids = [_doc_id(n) for n in range(start, min(size, start + BATCH))]
        with manifest.engine.begin() as conn:
            conn.execute(
                insert(t.documents),
                [
                    {
                        "document_id": d,
                        "source_id": "bench",
                        "object_id": d[:16],
                        "locator": f"bench://{d[:16]}",
                        "title": d[:16],
                        "pipeline_version": "bench",
                        "revision": 1,
                        "state": "active",
                        "acl": "[]",
                        "metadata": "{}",
                        "created_at": now,
                        "updated_at": now,
                    }
                    for d in ids
                ],
            )
            conn.execute(
                insert(t.document_indexes),
                [
                    {
                        "document_id": d,
                        "index_name": "main",
                        "applied_revision": 1,
                        "pipeline_version": "bench",
                        "chunks": 2,
                        "applied_at": now,
                    }
                    for d in ids
                ],
            )
        with sink._db.transaction() as db:
            db.executemany(
                "INSERT INTO documents (document_id, revision, deleted, changed_at) "
                "VALUES (?, 1, 0, ?)",
                [(d, now.isoformat()) for d in ids],
            )
            rows = []
            for d in ids:
                for ordinal in range(2):
                    chunk_no += 1
                    rows.append((chunk_no, f"{d[:32]}-{ordinal}", d, ordinal))
            db.executemany(
                "INSERT INTO chunks (id, chunk_id, document_id, ordinal, source, title, "
                "locator, text, acl, src) VALUES (?, ?, ?, ?, 'bench', '', '', 'x', '', '')",
                rows,
            )
    sink.close()
    manifest.close()


def measure(directory: Path, legacy: bool) -> dict[str, float]:
    """Run in a fresh process: peak RSS (MiB) of one reconcile compare above baseline."""
    from headwater.indexer.reconcile import compare
    from headwater.manifest.store import Manifest
    from headwater.sinks.sqlite import SqliteOptions, SqliteSink
    from headwater.sinks.testing import sink_context

    manifest = Manifest.open(f"sqlite:///{directory / 'manifest.db'}")
    sink = SqliteSink(SqliteOptions(), sink_context(directory, name="main"))
    tracemalloc.start()
    started = time.perf_counter()
    if legacy:  # what reconcile did before streaming: the whole inventory in a dict
        held = {row.document_id: (row.revision, row.chunks) for row in sink.inventory()}
        checked = len(held)
    else:
        drift = compare(manifest, sink, "main")
        assert drift.drifted == 0, drift.as_dict()
        checked = drift.checked
    seconds = time.perf_counter() - started
    _, traced = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "checked": checked,
        "rss_mib": peak / 1024,
        "traced_mib": traced / 2**20,
        "seconds": seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[10_000, 200_000])
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    parser.add_argument("--legacy", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(Path(args.measure), args.legacy)))
        return
    for size in args.sizes:
        with tempfile.TemporaryDirectory(prefix="hw-reconcile-") as tmp:
            started = time.perf_counter()
            build(Path(tmp), size)
            built = time.perf_counter() - started
            results = {}
            for legacy in (False, True):
                command = [sys.executable, __file__, "--measure", tmp]
                out = subprocess.run(
                    command + (["--legacy"] if legacy else []),
                    check=True,
                    capture_output=True,
                    text=True,
                )
                results["dict" if legacy else "streaming"] = json.loads(out.stdout)
            s, d = results["streaming"], results["dict"]
            print(
                f"{size:>9} documents (built in {built:.0f} s): streaming reconcile peak RSS "
                f"{s['rss_mib']:.0f} MiB, Python heap peak {s['traced_mib']:.1f} MiB, "
                f"{s['seconds']:.1f} s | whole inventory in a dict: peak RSS "
                f"{d['rss_mib']:.0f} MiB, heap peak {d['traced_mib']:.1f} MiB",
                flush=True,
            )


if __name__ == "__main__":
    main()
