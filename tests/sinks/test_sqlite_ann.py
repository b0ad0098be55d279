"""Approximate vector search of the sqlite index on generated clustered vectors.

One index of 20,000 chunks (2,000 documents, clustered like real embeddings: a document's
chunks share a subtopic) serves the recall, permission and starvation checks; the sink
is opened three times on it: approximate above 100 visible chunks with 200 candidates
(1% of the index), approximate always (``exact_below=0``), exact. The first two check
ACLs row by row for a caller who saw half the index (``wide_from=0``; by default only
past 100,000 visible chunks).
The rest check that the code rows stay in step with the chunks through every write.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from headwater import Workspace
from headwater.errors import ConfigError
from headwater.sinks.base import SearchRequest
from headwater.sinks.sqlite import SqliteOptions, SqliteSink
from headwater.sinks.sqlite._ann import quantize
from headwater.sinks.sqlite._driver import connect
from headwater.sinks.testing import make_chunks, make_document, sink_context
from headwater.types import Access, EmbeddedChunk, IndexDocument, SearchMode, caller_principals
from workspace_helpers import filesystem_source, write_config

DIM = 384
DOCS, PER_DOC = 2_000, 10
GROUPS = [f"g{i}" for i in range(10)]


def clustered(rng: np.random.Generator, subtopics: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """Unit vectors near ``centres[subtopics]`` (topic + subtopic + noise)."""
    v = centres[subtopics] + 1.2 * rng.standard_normal((len(subtopics), DIM))
    out: np.ndarray = (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)
    return out


class Corpus:
    def __init__(self, root: Path) -> None:
        rng = np.random.default_rng(5)
        topics = rng.standard_normal((40, DIM))
        self.centres = topics[np.arange(400) // 10] + rng.standard_normal((400, DIM))
        self.rng = rng
        pick = random.Random(5)
        self.access: dict[str, Access] = {}
        self.vectors: dict[str, np.ndarray] = {}
        writer = SqliteSink(SqliteOptions(), sink_context(root, dimension=DIM))
        for d in range(DOCS):
            roll = pick.random()
            if roll < 0.1:
                access = Access(public=True)
            elif roll < 0.15:
                access = Access(users=(f"u{pick.randrange(20)}@x.example",))
            else:
                access = Access(groups=tuple(pick.sample(GROUPS, pick.randint(1, 2))))
            doc = make_document(f"doc{d}", access, source=f"s{d % 3}")
            vectors = clustered(rng, np.full(PER_DOC, rng.integers(400)), self.centres)
            texts = [f"chunk {d} {o}" for o in range(PER_DOC)]
            writer.replace(doc, make_chunks(doc, texts, vectors.tolist()), 1)
            self.access[doc.document_id] = access
            self.vectors[doc.document_id] = vectors
        writer.close()
        options = SqliteOptions(exact_below=100, candidates=200, wide_from=0)
        self.ann = SqliteSink(options, sink_context(root, dimension=DIM))
        always = SqliteOptions(exact_below=0, candidates=200, wide_from=0)
        self.always = SqliteSink(always, sink_context(root, dimension=DIM))
        self.exact = SqliteSink(SqliteOptions(exact_below=10**9), sink_context(root, dimension=DIM))

    def query(self) -> list[float]:
        return [
            float(x) for x in clustered(self.rng, self.rng.integers(400, size=1), self.centres)[0]
        ]

    def close(self) -> None:
        self.ann.close()
        self.always.close()
        self.exact.close()


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Corpus]:
    built = Corpus(tmp_path_factory.mktemp("ann"))
    yield built
    built.close()


def request(vector: list[float], principals: list[str], k: int = 10, **kw: object) -> SearchRequest:
    return SearchRequest(
        text="", vector=vector, principals=principals, k=k, mode=SearchMode.VECTOR, **kw
    )


def visible(access: Access, principals: list[str]) -> bool:
    return bool(set(access.principals()) & set(principals))


@pytest.mark.parametrize(
    "groups",
    [GROUPS, ["g1", "g2"], ["g7"]],
    ids=["everyone", "broad", "one-group"],
)
def test_recall_at_10_against_exact_is_at_least_095(index: Corpus, groups: list[str]) -> None:
    principals = caller_principals("u1@x.example", groups)
    found = []
    for _ in range(60):
        vector = index.query()
        exact = {h.chunk_id for h in index.exact.search(request(vector, principals))}
        approx = {h.chunk_id for h in index.ann.search(request(vector, principals))}
        assert len(exact) == len(approx) == 10
        found.append(len(exact & approx) / 10)
    assert float(np.mean(found)) >= 0.95


def test_never_returns_an_invisible_chunk(index: Corpus) -> None:
    pick = random.Random(11)
    for _ in range(150):
        # Up to 9 of 10 groups: wide callers take the path that checks ACLs row by row.
        groups = pick.sample(GROUPS, pick.choice([0, 1, 2, 3, 7, 9]))
        email = f"u{pick.randrange(25)}@x.example" if pick.random() < 0.7 else None
        principals = caller_principals(email, groups)
        if pick.random() < 0.3:
            principals = [p for p in principals if p != "public"]
        sources = (
            pick.sample(["s0", "s1", "s2"], pick.randint(1, 2)) if pick.random() < 0.3 else None
        )
        k = pick.choice([1, 10, 50])
        ask = request(index.query(), principals, k=k, sources=sources)
        hits = index.ann.search(ask) + index.ann.search(ask)  # the second one plans by share
        for hit in hits:
            assert visible(index.access[hit.document_id], principals), hit.document_id
            assert sources is None or hit.source in sources


def test_a_caller_who_sees_a_handful_of_documents_still_gets_k_hits(index: Corpus) -> None:
    # u3 sees the public 10% plus a few documents; without public only those few.
    principals = [caller_principals("u3@x.example")[-1]]
    mine = [d for d, a in index.access.items() if visible(a, principals)]
    assert 1 <= len(mine) <= 60
    # Query from the densest cluster of *other* documents: every near chunk is invisible.
    other = next(d for d, a in index.access.items() if not visible(a, principals))
    near = [float(x) for x in index.vectors[other][0]]
    wanted = min(10 * len(mine), 25)
    for sink in (index.always, index.exact):  # `always` takes the approximate path
        hits = sink.search(request(near, principals, k=wanted))
        assert len(hits) == wanted
        assert {h.document_id for h in hits} <= set(mine)


def codes_in_step(sink: SqliteSink) -> None:
    """Every live document with chunks has one code row: its chunk ids and their codes."""
    db = sink._db
    rows = {
        d: (ids, bits)
        for d, ids, bits in db.execute("SELECT document_id, ids, bits FROM ann_codes")
    }
    held = {str(r[0]) for r in db.execute("SELECT DISTINCT document_id FROM chunks")}
    assert set(rows) == held
    for document_id, (ids, bits) in rows.items():
        chunk_ids = np.frombuffer(ids, np.int64)
        found = db.execute(
            "SELECT c.id, v.embedding FROM chunks c JOIN vectors v ON v.id = c.id "
            "WHERE c.document_id = ? ORDER BY c.id",
            [document_id],
        )
        assert sorted(chunk_ids.tolist()) == [int(r[0]) for r in found]
        by_id = {int(r[0]): np.frombuffer(r[1], np.float32) for r in found}
        matrix = np.stack([by_id[i] for i in chunk_ids.tolist()])
        assert bits == quantize(matrix, matrix.shape[1]).tobytes()
    orphans = db.execute("SELECT count(*) FROM vectors WHERE id NOT IN (SELECT id FROM chunks)")
    assert orphans[0][0] == 0


def _doc(
    name: str, access: Access, texts: list[str], seed: int
) -> tuple[IndexDocument, list[EmbeddedChunk]]:
    doc = make_document(name, access)
    vectors = np.random.default_rng(seed).standard_normal((len(texts), 8))
    return doc, make_chunks(doc, texts, vectors.tolist())


def test_writes_keep_the_code_rows_in_step(tmp_path: Path) -> None:
    sink = SqliteSink(SqliteOptions(exact_below=0), sink_context(tmp_path, dimension=8))
    try:
        for revision in range(1, 5):
            for i in range(8):
                texts = [f"doc {i} rev {revision} part {j}" for j in range((i + revision) % 4 + 1)]
                doc, items = _doc(f"d{i}", Access(groups=("g",)), texts, revision * 100 + i)
                sink.replace(doc, items, revision * 10)
                if i % 3 == 0:
                    sink.update_access(doc.document_id, Access(public=True), revision * 10 + 1)
                if i % 4 == 0:
                    sink.delete(doc.document_id, revision * 10 + 2)
                codes_in_step(sink)
        rows = {r.document_id: r.chunks for r in sink.inventory()}
        assert rows == {d: sink.count(d) for d in rows}
    finally:
        sink.close()


def test_inventory_reports_drift_in_the_codes_and_a_replace_repairs_it(tmp_path: Path) -> None:
    sink = SqliteSink(SqliteOptions(), sink_context(tmp_path, dimension=8))
    try:
        doc, items = _doc("drift", Access(public=True), ["a", "b", "c"], 1)
        sink.replace(doc, items, 1)
        assert [r.chunks for r in sink.inventory()] == [3]
        with sink._db.transaction() as db:
            db.execute("DELETE FROM ann_codes")
        assert [r.chunks for r in sink.inventory()] == [0]
        sink.replace(doc, items, 2)  # what reconcile --repair does with a mismatch
        assert [r.chunks for r in sink.inventory()] == [3]
        codes_in_step(sink)
    finally:
        sink.close()


def test_another_writer_is_seen_by_an_open_sink(tmp_path: Path) -> None:
    context = sink_context(tmp_path, dimension=8)
    reader = SqliteSink(SqliteOptions(exact_below=0, candidates=1, wide_from=0), context)
    writer = SqliteSink(SqliteOptions(), context)
    try:
        texts = [f"f{j}" for j in range(200)]
        doc, items = _doc("filler", Access(public=True), texts, 1)
        writer.replace(doc, items, 1)
        target = [1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0]
        assert reader.search(request(target, ["public"], k=1))  # loads every code
        vectors = [item.vector or [] for item in items]
        vectors[7] = target  # chunk 7 keeps its id; only its vector (and code) change
        writer.replace(doc, make_chunks(doc, texts, vectors), 2)
        hits = reader.search(request(target, ["public"], k=1))
        assert [h.ordinal for h in hits] == [7]
    finally:
        reader.close()
        writer.close()


def test_a_version_1_file_is_migrated_in_place(tmp_path: Path) -> None:
    context = sink_context(tmp_path, dimension=8)
    sink = SqliteSink(SqliteOptions(), context)
    docs = [
        _doc(f"old{i}", Access(public=True), [f"t{i}{j}" for j in range(3)], i) for i in range(5)
    ]
    for doc, items in docs:
        sink.replace(doc, items, 1)
    before = sink.search(request(docs[2][1][0].vector or [], ["public"], k=15))
    with sink._db.transaction() as db:  # lay the file out as file version 1 did
        db.execute("CREATE VIRTUAL TABLE vec USING vec0(embedding float[8] distance_metric=cosine)")
        db.execute("INSERT INTO vec (rowid, embedding) SELECT id, embedding FROM vectors")
        db.execute("DROP TABLE vectors")
        db.execute("DROP TABLE ann_codes")
        db.execute("DELETE FROM meta WHERE key IN ('ann_version', 'ann_epoch')")
        db.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    sink.close()
    migrated = SqliteSink(SqliteOptions(exact_below=0), context)
    try:
        tables = {r[0] for r in migrated._db.execute("SELECT name FROM sqlite_master")}
        assert "vec" not in tables and {"vectors", "ann_codes"} <= tables
        version = migrated._db.execute("SELECT value FROM meta WHERE key = 'schema_version'")
        assert version[0][0] == "2"
        codes_in_step(migrated)
        after = migrated.search(request(docs[2][1][0].vector or [], ["public"], k=15))
        assert [(h.chunk_id, h.score) for h in after] == [(h.chunk_id, h.score) for h in before]
    finally:
        migrated.close()


def test_reconcile_repairs_a_document_whose_code_row_was_lost(tmp_path: Path, corpus: Path) -> None:
    config = write_config(tmp_path, manifest_url=None, sources=filesystem_source(corpus))
    with Workspace.open(config) as ws:
        ws.sync()
        sink = ws.sink("main")
        assert isinstance(sink, SqliteSink)
        with sink._db.transaction() as db:
            lost = db.execute("SELECT document_id FROM ann_codes LIMIT 1")[0][0]
            db.execute("DELETE FROM ann_codes WHERE document_id = ?", [lost])
        found = ws.reconcile()["sinks"]["main"]
        assert not found["in_sync"] and lost in found["examples"], found
        ws.reconcile(repair=True)
        assert ws.reconcile()["sinks"]["main"]["in_sync"]
        codes_in_step(sink)


def test_an_unknown_file_version_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    context = sink_context(tmp_path, dimension=8)
    sink = SqliteSink(SqliteOptions(), context)
    with sink._db.transaction() as db:
        db.execute("UPDATE meta SET value = '9' WHERE key = 'schema_version'")
    sink.close()
    with pytest.raises(ConfigError, match=r"schema version '9'.*headwater rebuild"):
        SqliteSink(SqliteOptions(), context)
    check = connect(tmp_path / "index-test.db")
    try:
        tables = {r[0] for r in check.execute("SELECT name FROM sqlite_master")}
        assert check.execute("SELECT value FROM meta WHERE key = 'schema_version'")[0][0] == "9"
        assert "vectors" in tables  # the refused open rolled back, nothing else changed
    finally:
        check.close()


def test_a_version_1_file_of_another_dimension_is_refused_before_migrating(
    tmp_path: Path,
) -> None:
    sink = SqliteSink(SqliteOptions(), sink_context(tmp_path, dimension=8))
    with sink._db.transaction() as db:
        db.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    sink.close()
    with pytest.raises(ConfigError, match="8-dimensional"):
        SqliteSink(SqliteOptions(), sink_context(tmp_path, dimension=16))
    check = connect(tmp_path / "index-test.db")
    try:
        assert check.execute("SELECT value FROM meta WHERE key = 'schema_version'")[0][0] == "1"
    finally:
        check.close()
