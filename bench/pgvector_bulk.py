"""Bulk-load a ``pgvector`` generation: COPY into its tables, then build its indexes.

The idea: a rebuild into an empty generation need not pay the per-document ``replace``
(one transaction and an incremental HNSW insert per document, 133 chunks/s measured).
It can drop the generation's secondary indexes, ``COPY`` the rows in PostgreSQL's binary
format into exactly the tables the sink created (the ``tsv`` column is generated on the
way in), and rebuild each index from the definition PostgreSQL itself reports
(``pg_get_indexdef``), so the layout is the sink's and nothing is restated here. The rows
are ``ann_search.load``'s, drawn from the same seeded streams, so recall and latency can
be compared with a ``replace``-loaded table of the same size.
"""

from __future__ import annotations

import random
import struct
import sys
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import psycopg
from ann_search import (
    BATCH_DOCS,
    CHUNKS_PER_DOC,
    DIMENSION,
    SUBTOPICS,
    TOPICS,
    Space,
    _groups,
    bench_document_id,
)
from psycopg import pq
from psycopg.adapt import Dumper
from psycopg.types import TypeInfo

from headwater.sinks.pgvector._counts import count_all


def _vector_dumper(oid: int) -> type[Dumper]:
    class VectorDumper(Dumper):
        """A float32 array in pgvector's binary form: dim, unused, big-endian floats."""

        format = pq.Format.BINARY

        def dump(self, obj: Any) -> bytes:
            return struct.pack(">HH", len(obj), 0) + np.asarray(obj, ">f4").tobytes()

    VectorDumper.oid = oid
    return VectorDumper


def _chunk_rows(
    space: Space, docs: int, seed: int, vectors: Any, labels: Any, documents: list[Any]
) -> Iterator[tuple[Any, ...]]:
    """``ann_search.load``'s chunks as COPY rows, drawn from the same seeded streams; fills
    ``vectors``, ``labels`` and ``documents`` (the documents table's rows) on the way."""
    from corpus import _VOCAB

    from headwater.identity import chunk_id
    from headwater.types import Access

    rng = random.Random(seed)
    words = _VOCAB[:400]
    for first in range(0, docs, BATCH_DOCS):
        count = min(BATCH_DOCS, docs - first)
        nrng = np.random.default_rng([seed, first])
        subs = np.repeat(nrng.integers(0, TOPICS * SUBTOPICS, count), CHUNKS_PER_DOC)
        block = space.draw(nrng, subs)
        vectors[first * CHUNKS_PER_DOC : (first + count) * CHUNKS_PER_DOC] = block
        for d in range(first, first + count):
            public, groups = _groups(d, rng)
            label = -1 if public else (20 if groups == ("narrow",) else int(groups[0][1:]))
            labels[d * CHUNKS_PER_DOC : (d + 1) * CHUNKS_PER_DOC] = label
            document_id = bench_document_id(d)
            principals = Access(public=public, groups=groups).principals()
            documents.append((document_id, 1, False, "bench", principals))
            for o in range(CHUNKS_PER_DOC):
                text = " ".join(rng.choices(words, k=24))
                yield (
                    chunk_id(document_id, "bench-1", o), document_id, o, 1, "bench",
                    f"doc {d}", f"bench/{d}", text, principals, [],
                    block[(d - first) * CHUNKS_PER_DOC + o],
                )  # fmt: skip


def _drop_secondary_indexes(conn: psycopg.Connection[Any], schema: str, table: str) -> list[Any]:
    """Drop the table's indexes but its primary key; return (name, definition) of each."""
    definitions = conn.execute(
        "SELECT c.relname, pg_get_indexdef(i.indexrelid) FROM pg_index i "
        "JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = "
        "format('%%I.%%I', %s::text, %s::text)::regclass AND NOT i.indisprimary",
        [schema, table],
    ).fetchall()
    for name, _ in definitions:
        conn.execute(f'DROP INDEX "{schema}"."{name}"')
    return definitions


def bulk_load(
    url: str, sink: Any, space: Space, chunks: int, seed: int, *, maintenance_mb: int, workers: int
) -> tuple[dict[str, Any], Any]:
    """COPY ``chunks`` chunks into ``sink``'s (empty) tables, rebuild its indexes; return
    timings and (vectors, per-chunk ACL labels) as ``ann_search.load`` does."""
    schema, table, documents = sink.tables.schema, sink.tables.chunks, sink.tables.documents
    docs = chunks // CHUNKS_PER_DOC
    vectors = np.zeros((docs * CHUNKS_PER_DOC, DIMENSION), np.float32)
    labels = np.zeros(docs * CHUNKS_PER_DOC, np.int16)
    doc_rows: list[Any] = []
    columns = (
        "chunk_id, document_id, ordinal, revision, source, title, locator, text, "
        "principals, scopes, embedding"
    )
    with psycopg.connect(url, autocommit=True) as conn:
        definitions = _drop_secondary_indexes(conn, schema, table)
        info = TypeInfo.fetch(conn, "vector")
        assert info is not None
        info.register(conn)
        conn.adapters.register_dumper(None, _vector_dumper(info.oid))
        started = time.perf_counter()
        with conn.transaction(), conn.cursor() as cur:
            copy = f'COPY "{schema}"."{table}" ({columns}) FROM STDIN (FORMAT BINARY)'
            with cur.copy(copy) as cp:
                cp.set_types(["text", "text", "int4", "int8", "text", "text", "text", "text",
                              "text[]", "text[]", "vector"])  # fmt: skip
                rows = _chunk_rows(space, docs, seed, vectors, labels, doc_rows)
                for done, row in enumerate(rows, 1):
                    cp.write_row(row)
                    if done % 100_000 == 0:
                        rate = done / (time.perf_counter() - started)
                        print(f"copied {done:,} chunks ({rate:,.0f}/s)", file=sys.stderr)
            columns_doc = "document_id, revision, deleted, source, principals"
            with cur.copy(f'COPY "{schema}"."{documents}" ({columns_doc}) FROM STDIN') as cp:
                for doc in doc_rows:
                    cp.write_row(doc)
            cur.execute(count_all(sink.tables))  # the sink's chunks-per-principal table
        copied = time.perf_counter() - started
        conn.execute(f"SET maintenance_work_mem = '{maintenance_mb}MB'")
        conn.execute(f"SET max_parallel_maintenance_workers = {workers}")
        built: dict[str, float] = {}
        for name, definition in definitions:
            began = time.perf_counter()
            conn.execute(definition)
            short = name.removeprefix(table + "_")
            built[short] = round(time.perf_counter() - began, 1)
            print(f"index {name}: {built[short]} s", file=sys.stderr, flush=True)
    elapsed = time.perf_counter() - started
    loaded = {
        "load": "bulk: COPY (binary), then CREATE INDEX from the sink's own definitions",
        "documents": docs,
        "chunks": docs * CHUNKS_PER_DOC,
        "copy_s": round(copied, 1),
        "index_build_s": built,
        "load_s": round(elapsed, 1),
        "chunks_per_s": round(docs * CHUNKS_PER_DOC / elapsed),
        "maintenance_work_mem_mb": maintenance_mb,
        "parallel_maintenance_workers": workers,
    }
    return loaded, (vectors, labels)


class KeptServer:
    """An embedded PostgreSQL (the tests' wheel) whose data dir is kept under ``root``, so a
    rerun reuses a loaded table; started with ``settings`` (``-c name=value``), stopped fast.
    As root the server runs as ``nobody``, which must reach ``root``."""

    def __init__(self, root: Any, settings: dict[str, str]) -> None:
        import os
        import shutil
        import subprocess
        from pathlib import Path

        import pg_embedded

        root = Path(root).resolve()
        root.mkdir(parents=True, exist_ok=True)
        self.bin = pg_embedded._binaries()
        self.user = "nobody" if os.geteuid() == 0 else None
        data = root / "data"
        if self.user is not None:
            shutil.chown(root, self.user)
        if not (data / "PG_VERSION").exists():
            subprocess.run(
                [str(self.bin / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
                 "--encoding=UTF8", "--locale=C", "--no-sync"],
                check=True, capture_output=True, user=self.user,
            )  # fmt: skip
        self.port = pg_embedded._free_port()
        self.log = (root / "server.log").open("ab")
        options = [arg for k, v in settings.items() for arg in ("-c", f"{k}={v}")]
        self.process = subprocess.Popen(
            [str(self.bin / "postgres"), "-D", str(data), "-p", str(self.port),
             "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=", *options],
            stdout=self.log, stderr=subprocess.STDOUT, user=self.user,
            preexec_fn=pg_embedded._die_with_parent,
        )  # fmt: skip
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        deadline = time.monotonic() + 300  # recovery after an unclean stop may take a while
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"postgres exited at start; see {root / 'server.log'}")
            try:
                with psycopg.connect(self.url, connect_timeout=2) as conn:
                    conn.execute("SELECT 1")
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)  # polling readiness

    def stop(self) -> None:
        import signal
        import subprocess

        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # fast shutdown
            try:
                self.process.wait(120)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


def loaded_rows(url: str, schema: str, table: str) -> int:
    """Rows in a kept generation's chunks table whose HNSW index exists (0: none or no index)."""
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relname = %s",
            [schema, f"{table}_embedding_hnsw"],
        ).fetchone()
        if row is None or not row[0]:
            return 0
        counted = conn.execute(f'SELECT count(*) FROM "{schema}"."{table}"').fetchone()
    return 0 if counted is None else int(counted[0])
