# ruff: noqa: F811  (fixtures imported from pg_embedded are parameters here)
"""pgvector-specific behaviour against the real PostgreSQL + pgvector of ``pg_embedded``: the
ACL filter never starves a caller (HNSW path and exact fallback), a replace is one transaction
even when the connection dies half-way, the indexes exist, options and failures name the fix."""

from __future__ import annotations

import random
import threading
import tomllib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pydantic import ValidationError

from headwater.errors import ConfigError, CredentialError, TransientError
from headwater.sinks.base import SinkContext, WriteOutcome
from headwater.sinks.pgvector import PgvectorOptions, PgvectorSink
from headwater.sinks.pgvector._db import supports_iterative_scan
from headwater.sinks.testing import ask, make_chunks, make_document, near, unit_vector
from headwater.types import Access, EmbeddedChunk, SearchMode
from pg_embedded import (  # noqa: F401 - fixtures
    cosine,
    fresh_schema,
    open_sink,
    pgvector_database,
)
from ports import free_port

pytestmark = pytest.mark.server
ROOT = Path(__file__).resolve().parents[2]


# Graphs built for the starving-scan test before it gives up (one rarely needs a second).
GRAPH_BUILDS = 8


def _hidden_near_and_seen_far(sink: PgvectorSink) -> dict[str, list[float]]:
    """50 hidden chunks right around the query, 2,000 seen ones elsewhere (so the planner
    takes the HNSW index for the seen caller); the seen ones' vectors by chunk id."""
    query = unit_vector("crowd")
    seen: dict[str, list[float]] = {}
    for i in range(10):
        doc = make_document(f"hidden{i}", Access(groups=("hidden",)))
        vectors = [near(query, f"h{i}.{j}", 0.05) for j in range(5)]
        sink.replace(doc, make_chunks(doc, [f"h {i} {j}" for j in range(5)], vectors), 1)
    for i in range(80):
        doc = make_document(f"seen{i}", Access(groups=("seen",)))
        vectors = [unit_vector(f"s{i}.{j}") for j in range(25)]
        chunks = make_chunks(doc, [f"s {i} {j}" for j in range(25)], vectors)
        sink.replace(doc, chunks, 1)
        seen.update({c.chunk.chunk_id: list(c.vector or []) for c in chunks})
    return seen


def _analyze(url: str, sink: PgvectorSink) -> str:
    table = f'"{sink.tables.schema}"."{sink.tables.chunks}"'
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"ANALYZE {table}")
    return table


@pytest.mark.parametrize(
    ("extra", "least_recall"),
    [({"exact_below": 0}, 0.8), ({"max_scan_tuples": 1, "ef_search": 1, "exact_below": 0}, 0.0)],
)
def test_a_caller_hidden_from_the_nearest_chunks_still_gets_k_visible_chunks_best_first(
    open_sink: Callable[..., PgvectorSink],
    pgvector_database: str,
    extra: dict[str, Any],
    least_recall: float,
) -> None:
    """HNSW is approximate: which 10 come back depends on the graph, which is built with
    random levels. What holds on every build: k hits, every one visible to the caller,
    each scored with its true cosine, best first; with the default budget the hits are
    (nearly) the exact top 10. With a one-row budget the scan may return the candidates
    it had discarded (pgvector 0.8 does) rather than starve, so only the contract holds."""
    sink = open_sink(**extra)
    seen = _hidden_near_and_seen_far(sink)
    _analyze(pgvector_database, sink)
    query = unit_vector("crowd")
    hits = sink.search(ask(SearchMode.VECTOR, vector=query, principals=["group:seen"], k=10))
    assert len(hits) == 10 and all(h.chunk_id in seen for h in hits)
    assert [h.score for h in hits] == pytest.approx([cosine(seen[h.chunk_id], query) for h in hits])
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    exact = sorted(seen, key=lambda cid: -cosine(seen[cid], query))[:10]
    assert len({h.chunk_id for h in hits} & set(exact)) >= least_recall * 10


def test_the_hnsw_scan_alone_would_starve_so_the_exact_fallback_answers(
    open_sink: Callable[..., PgvectorSink],
    pgvector_database: str,
) -> None:
    """The planner takes the HNSW index for a caller who sees most chunks; with a one-row
    scan budget that scan returns fewer than k (the nearest are hidden); the sink does not.

    Whether the bare scan starves depends on the graph, which pgvector builds with random
    levels: on an occasional build it returns k anyway. The index is then built again
    (a new graph) until the bare scan starves, so the sink is always checked on a graph
    where the plain query would fall short."""
    sink = open_sink(max_scan_tuples=1, ef_search=1, exact_below=0)
    _hidden_near_and_seen_far(sink)
    table = _analyze(pgvector_database, sink)
    literal = "[" + ",".join(map(str, unit_vector("crowd"))) + "]"
    statement = (
        f"SELECT chunk_id FROM {table} WHERE principals && %s::text[] "
        "ORDER BY embedding <=> %s::vector LIMIT 10"
    )
    with psycopg.connect(pgvector_database) as conn:
        conn.execute("SET hnsw.iterative_scan = strict_order")
        conn.execute("SET hnsw.max_scan_tuples = 1")
        conn.execute("SET hnsw.ef_search = 1")
        plan = "\n".join(
            r[0] for r in conn.execute("EXPLAIN " + statement, [["group:seen"], literal])
        )
        (index,) = [word for word in plan.split() if word.endswith("embedding_hnsw")]
        for _build in range(GRAPH_BUILDS):
            alone = conn.execute(statement, [["group:seen"], literal]).fetchall()
            if len(alone) < 10:
                break
            conn.execute(f'REINDEX INDEX "{sink.tables.schema}".{index}')
    assert len(alone) < 10, f"the bare HNSW scan returned k on {GRAPH_BUILDS} graphs"
    query = unit_vector("crowd")
    hits = sink.search(ask(SearchMode.VECTOR, vector=query, principals=["group:seen"], k=10))
    assert len(hits) == 10 and all(h.text.startswith("s ") for h in hits)


def test_a_selective_acl_filter_returns_k_in_both_modes(
    open_sink: Callable[..., PgvectorSink],
) -> None:
    sink = open_sink()
    for i in range(200):
        few = i % 20 == 0
        doc = make_document(f"doc{i}", Access(groups=("few",) if few else ("many",)))
        sink.replace(doc, make_chunks(doc, [f"granite {i} {j}" for j in range(3)]), 1)
    for mode in (SearchMode.VECTOR, SearchMode.KEYWORD):
        vector = unit_vector("granite 7 1") if mode is SearchMode.VECTOR else None
        req = ask(mode, text="granite", vector=vector, principals=["group:few"], k=25)
        hits = sink.search(req)
        assert len(hits) == 25, mode
        assert all(int(h.text.split()[1]) % 20 == 0 for h in hits), mode


def test_text_search_config_decides_stemming(open_sink: Callable[..., PgvectorSink]) -> None:
    plain = open_sink()
    stemmed = open_sink(table_prefix="en_", text_search_config="english")
    for sink in (plain, stemmed):
        doc = make_document("stem", Access(public=True))
        sink.replace(doc, make_chunks(doc, ["the rivers were running fast"]), 1)

    def found(sink: PgvectorSink, text: str) -> int:
        return len(sink.search(ask(SearchMode.KEYWORD, text=text, principals=["public"])))

    assert found(plain, "river runs") == 0 and found(stemmed, "river runs") == 1
    assert found(plain, "rivers") == 1 and found(stemmed, "rivers") == 1


def test_a_replace_is_one_transaction_even_when_the_connection_dies(
    open_sink: Callable[..., PgvectorSink],
    pgvector_database: str,
) -> None:
    sink = open_sink()
    reader = open_sink()
    doc = make_document("dying", Access(public=True))
    old = make_chunks(doc, [f"dying old {i}" for i in range(4)])
    new = make_chunks(doc, [f"dying new {i}" for i in range(6)])
    sink.replace(doc, old, 1)
    real = sink._insert_chunks
    seen_midway: list[tuple[int, int | None, list[str]]] = []

    def half_then_killed(cur: Any, rows: Any) -> None:
        listed = list(rows)
        real(cur, listed[:3])
        # another session, mid-transaction: still the old revision, whole
        seen_midway.append(
            (reader.count(doc.document_id), reader.revision(doc.document_id),
             reader.chunk_texts(doc.document_id))
        )  # fmt: skip
        pid = cur.connection.info.backend_pid
        with psycopg.connect(pgvector_database, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", [pid])
        real(cur, listed[3:])

    sink._insert_chunks = half_then_killed  # type: ignore[method-assign]
    with pytest.raises(TransientError):
        sink.replace(doc, new, 2)
    del sink._insert_chunks
    assert seen_midway == [(4, 1, [f"dying old {i}" for i in range(4)])]
    assert sink.count(doc.document_id) == 4 and sink.revision(doc.document_id) == 1
    assert sink.chunk_texts(doc.document_id) == [f"dying old {i}" for i in range(4)]
    assert sink.replace(doc, new, 2) is WriteOutcome.APPLIED  # the pool recovered
    assert sink.chunk_texts(doc.document_id) == [f"dying new {i}" for i in range(6)]


def test_concurrent_writers_and_readers_see_one_whole_revision(
    open_sink: Callable[..., PgvectorSink],
) -> None:
    """Writers of one document race (revisions out of order, several sinks); a reader
    searching all along never sees two revisions, nor part of one."""
    writers = [open_sink() for _ in range(3)]
    reader = open_sink()
    doc = make_document("raced", Access(public=True))

    def version(revision: int) -> list[EmbeddedChunk]:
        size = 2 + revision % 4  # revisions differ in their number of chunks too
        return make_chunks(doc, [f"raced r{revision} part {i}" for i in range(size)])

    writers[0].replace(doc, version(0), 0)
    done = threading.Event()
    seen: list[set[str]] = []

    def read() -> None:
        while not done.is_set():
            hits = reader.search(ask(SearchMode.KEYWORD, text="raced part", k=50))
            revisions = {h.text.split()[1] for h in hits}
            sizes = {len(hits)}
            seen.append(revisions)
            assert len(revisions) == 1, revisions
            assert sizes == {2 + int(next(iter(revisions))[1:]) % 4}, (revisions, sizes)

    def write(sink: PgvectorSink, revisions: list[int]) -> None:
        for revision in revisions:
            sink.replace(doc, version(revision), revision)

    order = list(range(1, 31))
    random.Random(7).shuffle(order)
    with ThreadPoolExecutor(4) as pool:
        reading = pool.submit(read)
        writes = [pool.submit(write, w, order[i::3]) for i, w in enumerate(writers)]
        for future in writes:
            future.result()
        done.set()
        reading.result()
    assert seen and reader.revision(doc.document_id) == 30
    assert reader.chunk_texts(doc.document_id) == [t.chunk.text for t in version(30)]


def test_hnsw_and_gin_indexes_are_built(
    open_sink: Callable[..., PgvectorSink],
    pgvector_database: str,
) -> None:
    sink = open_sink(m=8, ef_construction=32)
    with psycopg.connect(pgvector_database) as conn:
        rows = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = %s AND tablename = %s",
            [sink.tables.schema, sink.tables.chunks],
        ).fetchall()
    defs = {name: definition for name, definition in rows}
    hnsw = defs["hw_main_embedding_hnsw"]
    assert "USING hnsw (embedding vector_cosine_ops)" in hnsw
    assert "m='8'" in hnsw and "ef_construction='32'" in hnsw
    assert "USING gin (principals)" in defs["hw_main_acl"]
    assert "USING gin (tsv)" in defs["hw_main_tsv"]
    assert sink.iterative_scan and sink.extension_version.startswith("0.8")


def test_pooled_connections_never_prepare_statements(
    open_sink: Callable[..., PgvectorSink],
) -> None:
    """A prepared search would turn generic after a few runs: blind to k, ACL and vector."""
    sink = open_sink()
    doc = make_document("plan", Access(public=True))
    sink.replace(doc, make_chunks(doc, ["plan one"]), 1)
    for _ in range(12):  # past psycopg's default threshold (5) and PostgreSQL's (5 more)
        sink.search(ask(SearchMode.VECTOR, vector=unit_vector("plan"), k=3))
    raw = sink._engine.raw_connection()
    try:
        conn = raw.driver_connection
        assert conn is not None and conn.prepare_threshold is None
        prepared = conn.execute("SELECT count(*) FROM pg_prepared_statements").fetchone()
        assert prepared == (0,)
    finally:
        raw.close()


def test_generation_tables_are_named_from_the_generation(
    open_sink: Callable[..., PgvectorSink], tmp_path: Path
) -> None:
    first = open_sink()
    second = PgvectorSink(first.options, SinkContext("main", tmp_path, 8, generation=3))
    try:
        assert (first.tables.chunks, second.tables.chunks) == ("hw_main", "hw_main__g3")
        assert second.tables.documents == "hw_main__g3_documents"
    finally:
        second.close()


def test_reopening_with_another_dimension_names_the_fix(
    open_sink: Callable[..., PgvectorSink],
) -> None:
    open_sink(8)
    with pytest.raises(ConfigError, match=r"holds 8-dimensional.*embedder makes 16.*rebuild"):
        open_sink(16)
    with pytest.raises(ConfigError, match=r"dimension = 8.*makes 16.*`dimension`"):
        open_sink(16, dimension=8)


@pytest.mark.parametrize(
    ("options", "key", "fix"),
    [
        ({}, "url", "Field required"),
        ({"url": "mysql://u@h/db"}, "url", "fix the index's `url`"),
        ({"url": "postgresql://u@h:5432"}, "url", "names no database"),
        ({"url": "postgresql://u@h/db", "m": 32, "ef_construction": 40}, "", "raise `ef_construction`"),
        ({"url": "postgresql://u@h/db", "dimension": 4096}, "dimension", "less than or equal to 2000"),
        ({"url": "postgresql://u@h/db", "ef_search": 0}, "ef_search", "greater than or equal to 1"),
        ({"url": "postgresql://u@h/db", "text_search_config": "x;drop"}, "text_search_config", "pattern"),
        ({"url": "postgresql://u@h/db", "collection": "x"}, "collection", "Extra inputs"),
    ],
)  # fmt: skip
def test_options_validation_names_the_key_and_the_fix(
    options: dict[str, Any], key: str, fix: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        PgvectorOptions.model_validate(options)
    error = caught.value.errors()[0]
    assert ".".join(str(p) for p in error["loc"]) == key
    assert fix in str(caught.value)


def test_a_too_long_table_name_names_table_prefix(tmp_path: Path) -> None:
    options = PgvectorOptions.model_validate(
        {"url": "postgresql://u@h/db", "table_prefix": "p" * 32}
    )
    with pytest.raises(ConfigError, match="`table_prefix`"):
        PgvectorSink(options, SinkContext("a-rather-long-index-name-here", tmp_path, 8))


def test_an_unreachable_server_is_transient_and_hides_the_password(tmp_path: Path) -> None:
    url = f"postgresql://hw:s3cret@127.0.0.1:{free_port()}/db"
    with pytest.raises(TransientError) as caught:
        PgvectorSink(PgvectorOptions.model_validate({"url": url}), SinkContext("m", tmp_path, 8))
    assert "s3cret" not in str(caught.value) and "127.0.0.1" in str(caught.value)
    assert "s3cret" not in repr(PgvectorOptions.model_validate({"url": url}))


def test_an_unknown_role_is_a_credential_error_and_an_unknown_database_a_config_error(
    pgvector_database: str,
    tmp_path: Path,
) -> None:
    server, _ = pgvector_database.rsplit("/", 1)
    stranger = server.replace("postgres@", "stranger@") + "/postgres"
    with pytest.raises(CredentialError, match=r"refused the login.*PGPASSWORD"):
        PgvectorSink(
            PgvectorOptions.model_validate({"url": stranger}), SinkContext("m", tmp_path, 8)
        )
    missing = f"{server}/no_such_database"
    with pytest.raises(ConfigError, match=r"create the database or fix the index's `url`"):
        PgvectorSink(
            PgvectorOptions.model_validate({"url": missing}), SinkContext("m", tmp_path, 8)
        )


def test_iterative_scan_needs_pgvector_0_8() -> None:
    assert not supports_iterative_scan("0.7.4") and not supports_iterative_scan("0.5.0")
    assert supports_iterative_scan("0.8.0") and supports_iterative_scan("0.10.1")


def test_the_entry_point_is_declared() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    sinks = project["project"]["entry-points"]["headwater.sinks"]
    assert sinks["pgvector"] == "headwater.sinks.pgvector:PgvectorSink"


def test_a_table_of_schema_1_gains_the_scopes_column_on_open(
    open_sink: Callable[..., PgvectorSink],
    pgvector_database: str,
) -> None:
    """A chunks table made before folder scopes gets ``scopes`` (empty) and its GIN index
    when opened; its old rows stay searchable and new writes carry their tokens."""
    sink = open_sink()
    old = make_document("old", Access(public=True))
    sink.replace(old, make_chunks(old, ["granite old"]), 1)
    with psycopg.connect(pgvector_database) as conn:
        table = f'"{sink.tables.schema}"."{sink.tables.chunks}"'
        conn.execute(f"ALTER TABLE {table} DROP COLUMN scopes")
    reopened = open_sink()
    new = make_document("new", Access(public=True), hierarchy="team/a.md")
    reopened.replace(new, make_chunks(new, ["granite new"]), 1)
    everything = reopened.search(ask(SearchMode.KEYWORD, text="granite"))
    assert {h.document_id for h in everything} == {old.document_id, new.document_id}
    scoped = reopened.search(ask(SearchMode.KEYWORD, text="granite", scopes=["docs:team"]))
    assert [h.document_id for h in scoped] == [new.document_id]
    with psycopg.connect(pgvector_database) as conn:
        defs = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE schemaname = %s AND tablename = %s",
            [sink.tables.schema, sink.tables.chunks],
        ).fetchall()
    assert any("USING gin (scopes)" in d for (d,) in defs)
