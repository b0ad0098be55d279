"""What the manifest's write path costs: new documents, applied revisions, edits, deletes.

Migration 0020 keeps document counts with triggers in every writer's transaction; this
bench prices that. On a fresh manifest (PostgreSQL by default, ``--sqlite`` for a file)
it commits ``--docs`` new documents through ``Manifest.commit_batch`` in batches of 500
(as the sync runner does), records them applied in one index through
``IndexState.record_applied`` in batches of 100 (as the indexer does), commits an edit
(a revision bump) of every document, and tombstones every tenth. Each phase prints
documents/s. Run it once with this checkout's ``src`` on PYTHONPATH and once with a
checkout before 0020 for the side-by-side figures.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterator

from pgdb import database

from headwater.manifest.index_state import Applied
from headwater.manifest.records import BatchCommit, DocumentWrite, TombstoneWrite
from headwater.manifest.store import Manifest

BATCH, APPLY = 500, 100


def write_of(n: int, revision: int) -> DocumentWrite:
    return DocumentWrite(
        document_id=f"{n:064d}", source_id="src", object_id=f"obj/{n}", locator=f"file:///{n}",
        title=f"t{n}", media_type="text/plain", source_version=f"v{revision}",
        checksum=f"{revision:064d}", signature=None, pipeline_version="pv1", revision=revision,
        sequence=None, state="active", acl=("group:staff",), metadata={}, last_seen_run=None,
        is_new=revision == 1,
    )  # fmt: skip


def phases(m: Manifest, docs: int) -> Iterator[tuple[str, Callable[[int], None], int]]:
    """(name, one step, its size) of each phase, in order."""

    def commit(revision: int) -> Callable[[int], None]:
        def step(start: int) -> None:
            batch = BatchCommit()
            batch.writes.extend(write_of(n, revision) for n in range(start, start + BATCH))
            m.commit_batch("run", batch)

        return step

    def apply(start: int) -> None:
        done = [Applied(f"{n:064d}", 1, "sig", "pv1", 3) for n in range(start, start + APPLY)]
        m.index_state.record_applied("main", done)

    def tombstone(start: int) -> None:
        batch = BatchCommit()
        batch.tombstones.extend(
            TombstoneWrite(f"{n:064d}", "src", f"obj/{n}", 3, None, "pruned")
            for n in range(start, start + BATCH * 10, 10)
        )
        m.commit_batch("run", batch)

    yield "insert (commit_batch, 500 a batch)", commit(1), BATCH
    yield "applied (record_applied, 100 a batch)", apply, APPLY
    yield "edit (commit_batch, revision bump)", commit(2), BATCH
    yield "tombstone every tenth (commit_batch)", tombstone, BATCH


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=50_000)
    parser.add_argument("--sqlite", action="store_true")
    parser.add_argument("--label", default="")
    args = parser.parse_args()
    docs = args.docs - args.docs % (BATCH * 10)
    with tempfile.TemporaryDirectory() as work, database("hw_pg10m_writes") as pg:
        url = f"sqlite:///{work}/manifest.db" if args.sqlite else pg
        m = Manifest.open(url)
        m.ensure_source("src", "filesystem")
        out: dict[str, float] = {}
        for name, step, size in phases(m, docs):
            stride = size * 10 if name.startswith("tombstone") else size
            started = time.perf_counter()
            for start in range(0, docs, stride):
                step(start)
            per = docs // (10 if name.startswith("tombstone") else 1)
            out[name] = round(per / (time.perf_counter() - started))
        pending = m.index_state.pending_count("main", "pv1")
        m.close()
    report = {"label": args.label, "docs": docs, "sqlite": args.sqlite, "docs_per_s": out,
              "pending_after": pending, "load": os.getloadavg()}  # fmt: skip
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
