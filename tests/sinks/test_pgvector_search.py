# ruff: noqa: F811  (fixtures imported from pg_embedded are parameters here)
"""The pgvector sink's search path, against the real PostgreSQL + pgvector of ``pg_embedded``:
a caller who sees few chunks is answered exactly whatever the HNSW graph, and the
chunks-per-principal counts that decide it stay exact through every kind of write."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from headwater.sinks.pgvector import PgvectorSink
from headwater.sinks.pgvector._counts import deltas
from headwater.sinks.testing import ask, make_chunks, make_document, unit_vector
from headwater.types import Access, SearchMode
from pg_embedded import cosine, fresh_schema, open_sink, pgvector_database  # noqa: F401

pytestmark = pytest.mark.server
DIM = 64  # random 64-dimension vectors: a 2-link graph cannot walk them exactly


def test_a_narrow_caller_gets_the_exact_top_k_however_poor_the_graph(
    open_sink: Callable[..., PgvectorSink],
    pgvector_database: str,
) -> None:
    """2,000 chunks, 5 % of them visible to ``group:few``; the graph is as poor as pgvector
    allows (``m = 2``, ``ef_construction = 4``, ``ef_search = 1``), which the walk alone
    answers with k visible chunks that are not the nearest. The caller's principals carry
    100 chunks, under ``exact_below``, so every query gets the exact top 10."""
    sink = open_sink(DIM, m=2, ef_construction=4, ef_search=1)
    assert sink.options.exact_below >= 100  # the default puts this caller on the exact path
    few: dict[str, list[float]] = {}
    for i in range(200):
        group = "few" if i % 20 == 0 else "many"
        doc = make_document(f"doc{i}", Access(groups=(group,)))
        vectors = [unit_vector(f"v{i}.{j}", DIM) for j in range(10)]
        chunks = make_chunks(doc, [f"d{i} c{j}" for j in range(10)], vectors)
        sink.replace(doc, chunks, 1)
        if group == "few":
            few.update({c.chunk.chunk_id: list(c.vector or []) for c in chunks})
    with psycopg.connect(pgvector_database, autocommit=True) as conn:
        conn.execute(f'ANALYZE "{sink.tables.schema}"."{sink.tables.chunks}"')
    for q in range(20):
        query = unit_vector(f"query{q}", DIM)
        hits = sink.search(ask(SearchMode.VECTOR, vector=query, principals=["group:few"]))
        exact = sorted(few, key=lambda cid: -cosine(few[cid], query))[:10]
        assert [h.chunk_id for h in hits] == exact, f"query {q}"


def _counts(url: str, sink: PgvectorSink) -> tuple[dict[str, int], dict[str, int]]:
    """(the sink's counts table without zero rows, the counts recomputed from its chunks)."""
    schema, chunks, counts = sink.tables.schema, sink.tables.chunks, sink.tables.principals
    with psycopg.connect(url) as conn:
        kept = conn.execute(
            f'SELECT principal, chunks FROM "{schema}"."{counts}" WHERE chunks <> 0'
        ).fetchall()
        true = conn.execute(
            f'SELECT p, count(*) FROM "{schema}"."{chunks}", unnest(principals) AS p GROUP BY p'
        ).fetchall()
    return dict(kept), dict(true)


def test_the_chunks_per_principal_follow_every_write(
    open_sink: Callable[..., PgvectorSink],
    pgvector_database: str,
) -> None:
    sink = open_sink(DIM)
    a = make_document("a", Access(groups=("g1", "g2")))
    b = make_document("b", Access(public=True))
    sink.replace(
        a, make_chunks(a, ["a0", "a1", "a2"], [unit_vector(f"a{j}", DIM) for j in "012"]), 1
    )
    sink.replace(b, make_chunks(b, ["b0", "b1"], [unit_vector(f"b{j}", DIM) for j in "01"]), 1)
    steps: list[Callable[[], object]] = [
        # a shrinks to one chunk: its two principals lose two chunks each
        lambda: sink.replace(a, make_chunks(a, ["a0"], [unit_vector("a0", DIM)]), 2),
        lambda: sink.update_access(b.document_id, Access(groups=("g2", "g3")), 2),
        lambda: sink.update_access(a.document_id, Access(users=("x@example.com",)), 3),
        lambda: sink.delete(b.document_id, 3),
        lambda: sink.replace(b, make_chunks(b, ["b0"], [unit_vector("b0", DIM)]), 2),  # stale
    ]
    for step in steps:
        step()
        kept, true = _counts(pgvector_database, sink)
        assert kept == true
    assert true == {"user:x@example.com": 1}
    sink.bind("m-2", empty=True)
    assert _counts(pgvector_database, sink) == ({}, {})


def test_a_table_written_before_the_counts_gets_them_on_open(
    open_sink: Callable[..., PgvectorSink],
    pgvector_database: str,
) -> None:
    sink = open_sink(DIM)
    for i, access in enumerate([Access(public=True), Access(groups=("g1",)), Access()]):
        doc = make_document(f"d{i}", access)
        texts = [f"d{i} c{j}" for j in range(i + 1)]
        sink.replace(doc, make_chunks(doc, texts, [unit_vector(t, DIM) for t in texts]), 1)
    with psycopg.connect(pgvector_database) as conn:
        conn.execute(f'DROP TABLE "{sink.tables.schema}"."{sink.tables.principals}"')
    reopened = open_sink(DIM)
    kept, true = _counts(pgvector_database, reopened)
    assert kept == true == {"public": 1, "group:g1": 2}


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ([], [(["public"], 3)], {"public": 3}),
        ([(["public"], 3)], [], {"public": -3}),
        ([(["g1", "g2"], 3)], [(["g2", "g3"], 1)], {"g1": -3, "g2": -2, "g3": 1}),
        ([(["g1"], 2)], [(["g1"], 2)], {}),  # same ACL, same size: nothing to write
        ([(["g1", "g1"], 1)], [], {"g1": -1}),  # a principal listed twice counts once
    ],
)
def test_count_deltas(old: Any, new: Any, expected: dict[str, int]) -> None:
    assert deltas(old, new) == expected
    assert list(deltas(old, new)) == sorted(expected)  # the upsert's lock order


def test_vectors_are_kept_in_their_rows(
    open_sink: Callable[..., PgvectorSink],
    pgvector_database: str,
) -> None:
    """``STORAGE MAIN`` on a new table: the exact path reads no TOAST for a vector."""
    sink = open_sink(DIM)
    with psycopg.connect(pgvector_database) as conn:
        row = conn.execute(
            "SELECT a.attstorage FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relname = %s AND a.attname = 'embedding'",
            [sink.tables.schema, sink.tables.chunks],
        ).fetchone()
    assert row == ("m",)
