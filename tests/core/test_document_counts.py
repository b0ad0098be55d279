"""The maintained document counts equal what the documents table says (migration 0020).

``status`` reads each source's documents and each index's pending work from
``document_counts``, kept by triggers. After every step of a random walk of document and
index-row changes (inserts, revision bumps, tombstones, revivals, purges, applied rows at
old and current revisions and other pipeline versions, forgotten rows, a forgotten index,
a no-op's last-seen marks), on SQLite and PostgreSQL, the counts must equal the counts of
the tables themselves: the pending work by ``IndexState.pending`` (the query status ran
before), the documents by ``COUNT(*)``. Then two processes (one bumping revisions and
tombstoning, one recording applied revisions it read a moment before, the race the
advisory locks close) write at once, and the counts must still be exact.
"""

from __future__ import annotations

import multiprocessing
import random
from typing import Any

from sqlalchemy import bindparam, text

from headwater.manifest.counts import lock_sources
from headwater.manifest.db import MIGRATIONS, begin_write, create_manifest_engine
from headwater.manifest.index_state import Applied
from headwater.manifest.store import Manifest

SOURCES = ("alpha", "beta", "gamma")
VERSIONS = ("pv1", "pv2")
INDEXES = ("main", "kw")


def insert(conn: Any, doc: str, source: str, state: str = "active", revision: int = 1) -> None:
    conn.execute(
        text(
            "INSERT INTO documents (document_id, source_id, object_id, locator, title, "
            "pipeline_version, revision, state, acl, metadata, created_at, updated_at) VALUES "
            "(:d, :s, :o, :l, :t, 'c1', :r, :st, '[]', '{}', CURRENT_TIMESTAMP, "
            "CURRENT_TIMESTAMP)"
        ),
        {"d": doc, "s": source, "o": doc, "l": doc, "t": doc, "r": revision, "st": state},
    )


def truth(m: Manifest) -> tuple[dict[tuple[str, str], int], dict[tuple[str, str], int]]:
    """Documents per (source, state) and pending per (index, version), from the tables."""
    with m.engine.connect() as conn:
        rows = conn.execute(
            text("SELECT source_id, state, COUNT(*) FROM documents GROUP BY source_id, state")
        )
        docs = {(r[0], r[1]): int(r[2]) for r in rows}
    pending = {
        (i, v): len(m.index_state.pending(i, v, limit=1_000_000)) for i in INDEXES for v in VERSIONS
    }
    return docs, pending


def counted(m: Manifest) -> tuple[dict[tuple[str, str], int], dict[tuple[str, str], int]]:
    """The same, from the maintained counts (the functions status calls)."""
    docs = {(s, st): m.count_documents(s, st) for s in SOURCES for st in ("active", "deleted")}
    pending = {(i, v): m.index_state.pending_count(i, v) for i in INDEXES for v in VERSIONS}
    return {k: v for k, v in docs.items() if v}, pending


def ids_of(m: Manifest) -> list[tuple[str, str, int, str]]:
    with m.engine.connect() as conn:
        rows = conn.execute(
            text("SELECT document_id, source_id, revision, state FROM documents ORDER BY 1")
        )
        return [(r[0], r[1], int(r[2]), r[3]) for r in rows]


def step(m: Manifest, rng: random.Random, n: int) -> str:
    """One random change; returns its name (for the failure message)."""
    docs = ids_of(m)
    kinds = ["insert", "bump", "tombstone", "revive", "seen", "purge", "apply", "apply"]
    kinds += ["apply", "apply_old", "forget", "raw_index_update", "move"]
    kind = "forget_index" if n % 40 == 39 else rng.choice(kinds)
    if kind == "insert" or not docs:
        with begin_write(m.engine) as conn:
            for k in range(rng.randint(1, 4)):
                insert(conn, f"doc-{n}-{k}", rng.choice(SOURCES))
        return "insert"
    picked = rng.sample(docs, min(len(docs), rng.randint(1, 5)))
    ids = [d[0] for d in picked]
    sql = {
        "bump": "UPDATE documents SET revision = revision + 1 WHERE document_id IN :ids",
        "tombstone": "UPDATE documents SET state = 'deleted', revision = revision + 1 "
        "WHERE document_id IN :ids",
        "revive": "UPDATE documents SET state = 'active', revision = revision + 1 "
        "WHERE document_id IN :ids",
        "seen": "UPDATE documents SET last_seen_run = 'r' WHERE document_id IN :ids",
        "purge": "DELETE FROM documents WHERE document_id IN :ids",
        "raw_index_update": "UPDATE document_indexes SET applied_revision = applied_revision + 1 "
        "WHERE document_id IN :ids",
        "move": "UPDATE documents SET source_id = 'gamma' WHERE document_id IN :ids",
    }
    if kind in sql:
        with begin_write(m.engine) as conn:
            conn.execute(text(sql[kind]).bindparams(bindparam("ids", expanding=True)), {"ids": ids})
        return kind
    index = rng.choice(INDEXES)
    if kind == "forget":
        m.index_state.forget(index, ids)
    elif kind == "forget_index":
        m.index_state.forget_index(index)
    else:
        behind = 1 if kind == "apply_old" else 0
        m.index_state.record_applied(
            index,
            [
                Applied(d, max(r - behind, 0), "sig", rng.choice(VERSIONS), 2)
                for d, _, r, _ in picked
            ],
        )
    return kind


def test_counts_follow_every_change(manifest_url: str) -> None:
    m = Manifest.open(manifest_url)
    rng = random.Random(29)
    try:
        done = []
        for n in range(160):
            done.append(step(m, rng, n))
            assert counted(m) == truth(m), f"after {done[-6:]}"
        assert {"tombstone", "purge", "apply_old", "forget_index", "move"} <= set(done)
        assert any(v for v in truth(m)[1].values()) and any(truth(m)[0].values())
        m.index_state.counts.fold()  # folding keeps the sums (and empties PostgreSQL's log)
        assert counted(m) == truth(m)
    finally:
        m.close()


def test_the_migration_counts_a_filled_manifest(manifest_url: str) -> None:
    """A manifest filled at 0019 (before the triggers) gets its counts from 0020's seed."""
    from alembic import command
    from alembic.config import Config

    engine = create_manifest_engine(manifest_url)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    rng = random.Random(20)
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "0019")
        for n in range(300):
            state = "deleted" if n % 4 == 0 else "active"
            insert(conn, f"d{n}", SOURCES[n % 3], state, revision=1 + n % 3)
            for index in INDEXES[: n % 3]:
                conn.execute(
                    text(
                        "INSERT INTO document_indexes VALUES (:d, :i, :r, NULL, :v, 1, "
                        "CURRENT_TIMESTAMP)"
                    ),
                    {"d": f"d{n}", "i": index, "r": rng.randint(0, 3), "v": rng.choice(VERSIONS)},
                )
    engine.dispose()
    m = Manifest.open(manifest_url)  # migrates to head: 0020 seeds the counts
    try:
        docs, pending = truth(m)
        assert all(pending.values()) and counted(m) == (docs, pending)
    finally:
        m.close()


def writer(url: str, seed: int, rounds: int) -> None:
    """Bump revisions and flip states of random documents, a few per transaction."""
    m = Manifest.open(url)
    rng = random.Random(seed)
    for _ in range(rounds):
        source = rng.choice(SOURCES)
        ids = tuple(f"{source}-{rng.randrange(40)}" for _ in range(3))
        state = rng.choice(["state", "'deleted'", "'active'"])
        with begin_write(m.engine) as conn:
            lock_sources(conn, [source], shared=False)
            for doc in sorted(set(ids)):
                conn.execute(
                    text(
                        f"UPDATE documents SET revision = revision + 1, state = {state} "
                        "WHERE document_id = :d"
                    ),
                    {"d": doc},
                )
    m.close()


def indexer(url: str, index: str, rounds: int) -> None:
    """Record applied revisions read a moment before (and so often one behind) in one
    index (each index has one indexer at a time: claims see to that)."""
    m = Manifest.open(url)
    rng = random.Random(index)
    for _ in range(rounds):
        ids = [f"{rng.choice(SOURCES)}-{rng.randrange(40)}" for _ in range(4)]
        found = {r.document_id: r for r in m.documents_by_ids(ids).values()}
        m.index_state.record_applied(
            index, [Applied(d, r.revision, "sig", "pv1", 1) for d, r in sorted(found.items())]
        )
    m.close()


def test_counts_hold_under_two_writing_processes(manifest_url: str) -> None:
    m = Manifest.open(manifest_url)
    try:
        with begin_write(m.engine) as conn:
            for source in SOURCES:
                for k in range(40):
                    insert(conn, f"{source}-{k}", source)
        ctx = multiprocessing.get_context("fork")
        m.engine.dispose()
        procs = [
            ctx.Process(target=writer, args=(manifest_url, 1, 150)),
            ctx.Process(target=writer, args=(manifest_url, 2, 150)),
            ctx.Process(target=indexer, args=(manifest_url, "main", 200)),
            ctx.Process(target=indexer, args=(manifest_url, "kw", 200)),
        ]
        for p in procs:
            p.start()
        for p in procs:
            p.join(300)
        assert [p.exitcode for p in procs] == [0, 0, 0, 0]
        docs, pending = truth(m)
        assert counted(m) == (docs, pending)
        with m.engine.connect() as conn:  # both kinds of work happened
            applied = conn.execute(text("SELECT COUNT(*) FROM document_indexes")).scalar_one()
            bumped = conn.execute(text("SELECT MAX(revision) FROM documents")).scalar_one()
        assert applied > 0 and bumped > 5
    finally:
        m.close()
