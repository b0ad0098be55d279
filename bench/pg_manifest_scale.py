"""A PostgreSQL manifest at millions of documents: fill, migrate, time the hot reads.

Issue 29, goal 5. Creates its own database, brings it to schema ``--from`` (0019: before
migration 0020) and fills it by ``INSERT ... SELECT generate_series`` in resumable chunks
(``bench_fill``; ``--keep`` keeps the database): ``--docs`` documents over ``--sources``
sources, one in ten tombstoned, an index row for each active one but one in a thousand,
runs and failures, with the big tables' indexes dropped for the fill and rebuilt after.
Then ``VACUUM ANALYZE``, the upgrade to head (probed: how long a read and a write wait),
and the functions behind ``status``, the search gate, a source's no-op lookups, ``runs``
and ``failures`` ``--repeat`` times each (p50/p95), the statements ``status`` sent before
0020, and ``headwater status --json`` as a process. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine

SERVER = "postgresql+psycopg://postgres@127.0.0.1:5432"
QUIET: dict[str, Any] = {"capture_output": True, "text": True}
BIG = ("documents", "document_indexes", "tombstones", "failures", "runs")
FILLED = BIG[:4]  # indexes dropped for the fill (runs is small and others point at it)

DOCS_SQL = (
    "INSERT INTO documents (document_id, source_id, object_id, locator, title, media_type, "
    "source_version, checksum, signature, pipeline_version, revision, sequence, state, acl, "
    "metadata, last_seen_run, created_at, updated_at) "
    "SELECT md5('d' || g) || md5('e' || g), 'src' || (g % :sources), 'obj/' || g, "
    "'file:///obj/' || g, 'title ' || g, 'text/plain', 'v' || g, md5('c' || g) || md5('f' || g), "
    "NULL, 'pv1', 1 + g % 3, NULL, CASE WHEN g % 10 = 0 THEN 'deleted' ELSE 'active' END, "
    "'[\"group:staff\"]', '{}', NULL, now(), now() FROM {SERIES}"
)
INDEX_SQL = (
    "INSERT INTO document_indexes (document_id, index_name, applied_revision, "
    "applied_signature, pipeline_version, chunks, applied_at) "
    "SELECT md5('d' || g) || md5('e' || g), 'main', 1 + g % 3, NULL, 'pv1', 3, "
    "now() - (g % 864000) * interval '1 second' FROM {SERIES} "
    "WHERE g % 10 <> 0 AND g % 1000 <> 1"
)
TOMB_SQL = (
    "INSERT INTO tombstones (document_id, source_id, object_id, revision, sequence, reason, "
    "detected_at, completed_at) SELECT md5('d' || g) || md5('e' || g), 'src' || (g % :sources), "
    "'obj/' || g, 1 + g % 3, NULL, 'pruned', now(), now() "
    "FROM {SERIES} WHERE g % 10 = 0"
)
FAIL_SQL = (
    "INSERT INTO failures (source_id, object_id, document_id, locator, stage, error_class, "
    "message, pipeline_version, attempts, permanent, status, priority, first_failed_at, "
    "last_failed_at) SELECT 'src' || (g % :sources), 'obj/' || g, "
    "md5('d' || g) || md5('e' || g), 'file:///obj/' || g, "
    "CASE WHEN g % 3 = 0 THEN 'fetch' ELSE 'parse' END, 'boom', 'm', 'pv1', 1, 0, "
    "CASE WHEN g % 10000 = 7 THEN 'dead' WHEN g % 1000 = 7 THEN 'retrying' ELSE 'resolved' END, "
    "0, now(), now() FROM {SERIES} WHERE g % 100 = 7"
)
RUNS_SQL = (
    "INSERT INTO runs (run_id, source_id, status, window_end, started_at, finished_at, seen, "
    "new, changed, unchanged, deleted, failed, stale, duration_s, attempts) "
    "SELECT (md5('r' || g))::uuid::text, 'src' || (g % :sources), 'succeeded', now(), "
    "now() - g * interval '1 minute', now(), 0, 0, 0, 0, 0, 0, 0, 0.0, 1 "
    "FROM {SERIES}"
)


def sql(statement: str) -> str:
    """A fill statement with its parameters typed (generate_series is overloaded)."""
    series = "generate_series(CAST(:a AS int8), CAST(:b AS int8)) AS g"
    return statement.replace("{SERIES}", series).replace(":sources", "CAST(:sources AS int)")


def doc_id(g: int) -> str:
    """The id the fill gave row ``g``."""
    return hashlib.md5(f"d{g}".encode()).hexdigest() + hashlib.md5(f"e{g}".encode()).hexdigest()


def ensure_database(name: str) -> str:
    """Create ``name`` unless it exists (a kept run); its URL."""
    made = subprocess.run(["createdb", "-h", "127.0.0.1", "-U", "postgres", name], **QUIET)
    if made.returncode and "already exists" not in made.stderr:
        raise RuntimeError(made.stderr)
    return f"{SERVER}/{name}"


def drop_database(name: str) -> None:
    subprocess.run(["dropdb", "-h", "127.0.0.1", "-U", "postgres", "--force", name], check=True)


def upgrade(engine: Engine, target: str) -> float:
    """Alembic's upgrade to ``target`` the way ``Manifest.open`` runs it; seconds taken."""
    from alembic import command, config as alembic_config  # noqa: I001

    from headwater.manifest.db import MIGRATE_LOCK, MIGRATIONS, begin_write

    config = alembic_config.Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    started = time.perf_counter()
    with begin_write(engine) as connection:
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATE_LOCK})
        config.attributes["connection"] = connection
        command.upgrade(config, target)
    return time.perf_counter() - started


def probed_upgrade(engine: Engine, target: str) -> dict[str, float]:
    """The upgrade, while one thread reads a document and another rewrites one (a
    no-op's last-seen mark) every 50 ms: the longest each waited says whether the
    migration blocked readers or writers, and for how long."""
    stop = threading.Event()
    worst = {"read": 0.0, "write": 0.0}
    probe_id = doc_id(3)  # an active document

    def loop(kind: str, statement: str) -> None:
        with engine.connect() as conn:  # a pooled connection apart from the migration's
            while not stop.is_set():
                t0 = time.perf_counter()
                conn.execute(text(statement), {"d": probe_id})
                conn.commit()
                worst[kind] = max(worst[kind], time.perf_counter() - t0)
                time.sleep(0.05)

    probes = {
        "read": "SELECT * FROM documents WHERE document_id = :d",
        "write": "UPDATE documents SET last_seen_run = 'probe' WHERE document_id = :d",
    }
    threads = [threading.Thread(target=loop, args=probe) for probe in probes.items()]
    for thread in threads:
        thread.start()
    time.sleep(0.5)
    try:
        took = upgrade(engine, target)
    finally:
        time.sleep(0.5)
        stop.set()
        for thread in threads:
            thread.join()
    return {"s": took, "longest_read_s": worst["read"], "longest_write_s": worst["write"]}


def revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        if conn.execute(text("SELECT to_regclass('alembic_version')")).scalar() is None:
            return None
        return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()


def drop_indexes(engine: Engine) -> None:
    """Save and drop the big tables' indexes and primary keys (rebuilt after the fill)."""
    with engine.begin() as conn:
        done = conn.execute(text("SELECT to_regclass('bench_fill')")).scalar() is not None
        if done and conn.execute(text("SELECT count(*) FROM bench_fill WHERE a = 0")).scalar():
            return  # the fill is complete and its indexes rebuilt
        conn.execute(text("CREATE TABLE IF NOT EXISTS bench_ddl (seq serial, ddl text)"))
        if conn.execute(text("SELECT count(*) FROM bench_ddl")).scalar_one():
            return  # dropped by an earlier call, not rebuilt yet
        cons = conn.execute(text(
            "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM "
            "pg_constraint WHERE contype IN ('p', 'u') AND conrelid::regclass::text = ANY(:t)"
        ), {"t": list(FILLED)}).all()  # fmt: skip
        named = {c[1] for c in cons}
        idx = conn.execute(text(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = ANY(:t)"
        ), {"t": list(FILLED)}).all()  # fmt: skip
        save = text("INSERT INTO bench_ddl (ddl) VALUES (:d)")
        for table, name, definition in cons:
            conn.execute(save, {"d": f'ALTER TABLE {table} ADD CONSTRAINT "{name}" {definition}'})
            conn.execute(text(f'ALTER TABLE {table} DROP CONSTRAINT "{name}"'))
        for name, definition in (i for i in idx if i[0] not in named):
            conn.execute(save, {"d": definition})
            conn.execute(text(f'DROP INDEX "{name}"'))


def fill(engine: Engine, docs: int, sources: int, chunk: int) -> float:
    """Fill in chunks of ``chunk`` documents, skipping chunks already done; seconds."""
    started = time.perf_counter()
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE IF NOT EXISTS bench_fill (a bigint PRIMARY KEY)"))
        done = {r[0] for r in conn.execute(text("SELECT a FROM bench_fill"))}
        if not done:
            conn.execute(text(
                "INSERT INTO sources (source_id, type, created_at) SELECT 'src' || g, "
                "'filesystem', now() FROM generate_series(0, CAST(:s AS int) - 1) g"
            ), {"s": sources})  # fmt: skip
            runs = {"a": 1, "b": max(docs // 50, 1000), "sources": sources}
            conn.execute(text(sql(RUNS_SQL)), runs)
    for a in (a for a in range(1, docs + 1, chunk) if a not in done):
        b = min(a + chunk - 1, docs)
        t0 = time.perf_counter()
        with engine.begin() as conn:
            for statement in (DOCS_SQL, INDEX_SQL, TOMB_SQL, FAIL_SQL):
                conn.execute(text(sql(statement)), {"a": a, "b": b, "sources": sources})
            conn.execute(text("INSERT INTO bench_fill (a) VALUES (:a)"), {"a": a})
        print(f"  filled {b:,} documents ({time.perf_counter() - t0:.1f} s)", flush=True)
    return time.perf_counter() - started


def rebuild_indexes(engine: Engine) -> float:
    started = time.perf_counter()
    with engine.begin() as conn:
        conn.execute(text("SET maintenance_work_mem = '1GB'"))
        for (ddl,) in conn.execute(text("SELECT ddl FROM bench_ddl ORDER BY seq")).all():
            conn.execute(text(ddl))
        conn.execute(text("DROP TABLE bench_ddl"))
        conn.execute(text("INSERT INTO bench_fill VALUES (0) ON CONFLICT DO NOTHING"))  # done
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM ANALYZE"))
    return time.perf_counter() - started


def timed(call: Callable[[], Any], repeat: int) -> dict[str, float]:
    call()  # warm: the first call pays connection and plan caches
    took = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        call()
        took.append(1000 * (time.perf_counter() - t0))
    took.sort()
    p95 = took[round(0.95 * (len(took) - 1))]
    return {"p50_ms": statistics.median(took), "p95_ms": p95, "max_ms": took[-1]}


LEGACY_PENDING = (
    "SELECT count(*) FROM documents d LEFT OUTER JOIN document_indexes di "
    "ON di.document_id = d.document_id AND di.index_name = 'main' "
    "WHERE (d.state = 'active' AND (di.applied_revision IS NULL "
    "OR di.applied_revision < d.revision OR di.pipeline_version <> 'pv1')) "
    "OR (d.state = 'deleted' AND di.applied_revision IS NOT NULL "
    "AND di.applied_revision < d.revision)"
)


def legacy(url: str, sources: int) -> dict[str, Callable[[], Any]]:
    """The statements ``status`` sent before migration 0020, as plain SQL."""
    engine = create_engine(url)

    def run(statement: str, **params: Any) -> Callable[[], Any]:
        def call() -> Any:
            with engine.connect() as conn:
                return conn.execute(text(statement), params).all()

        return call

    count = "SELECT count(*) FROM documents WHERE source_id = :s AND state = :st"

    def per_source() -> None:
        for i in range(sources):
            for state in ("active", "deleted"):
                run(count, s=f"src{i}", st=state)()

    return {
        "before 0020: pending count (join)": run(LEGACY_PENDING),
        "before 0020: sources with documents (DISTINCT)": run(
            "SELECT DISTINCT source_id FROM documents WHERE state = 'active'"
        ),
        "before 0020: documents per source and state (2 x sources counts)": per_source,
    }


def calls(url: str, docs: int, sources: int) -> dict[str, Callable[[], Any]]:
    from headwater.manifest.schedule import ScheduleStore
    from headwater.manifest.store import Manifest
    from headwater.reports import IndexInfo, status_report

    m = Manifest.open(url)
    rng = random.Random(7)
    ids = [doc_id(g) for g in rng.sample(range(1, docs + 1), 500)]
    objects = [f"obj/{g}" for g in range(sources + 1, docs + 1, sources)][:500]  # of src1
    src = [(f"src{i}", "filesystem") for i in range(sources)]
    main = [IndexInfo("main", "sqlite", "pv1", live_key="main", live_version="pv1")]
    schedule = ScheduleStore(m.engine)
    return {
        "status (status_report)": lambda: status_report(
            m, src, {}, main, pipeline_version="pv1", content_version="c1"
        ),
        "pending count (main)": lambda: m.index_state.pending_count("main", "pv1"),
        "search gate: visible_to 100 ids": lambda: m.visible_to(ids[:100], ["group:staff"]),
        "no-op: documents_by_object_ids 500": lambda: m.documents_by_object_ids("src1", objects),
        "no-op: documents_by_ids 500": lambda: m.documents_by_ids(ids),
        "no-op: dead_source_versions 500": lambda: m.failures.dead_source_versions(ids),
        "no-op: tombstone_sequences 500": lambda: m.tombstone_sequences(ids),
        "runs (list_runs)": lambda: schedule.list_runs(),
        "runs of a source": lambda: schedule.list_runs("src3"),
        "failures (list)": lambda: m.failures.list(),
        "failures of a source": lambda: m.failures.list(source_id="src3"),
    }


def cli_status(url: str, sources: int, repeat: int, src: str = "") -> dict[str, float]:
    """``headwater status --json`` as a process, from start to exit (with ``src`` on
    PYTHONPATH: another checkout's code, e.g. main's before migration 0020)."""
    with tempfile.TemporaryDirectory() as work:
        blocks = "".join(
            f'[[source]]\nid = "src{i}"\ntype = "filesystem"\nroot = "{work}"\n'
            'access = { groups = ["staff"] }\n\n'
            for i in range(sources)
        )
        Path(work, "headwater.toml").write_text(
            f'[workspace]\ntenant = "bench"\nstate_dir = "{work}/.hw"\n\n'
            f'[manifest]\nurl = "{url}"\n\n[embedder]\ntype = "fake"\n\n'
            f'[[index]]\nname = "main"\ntype = "sqlite"\n\n{blocks}'
        )
        env = dict(os.environ, HF_HUB_OFFLINE="1")
        if src:
            env["PYTHONPATH"] = src
        command = [sys.executable, "-m", "headwater", "status", "--json"]

        def call() -> None:
            subprocess.run(command, cwd=work, env=env, check=True, capture_output=True)

        return timed(call, repeat)


def prepare(engine: Engine, url: str, args: argparse.Namespace, report: dict[str, Any]) -> None:
    """Schema ``--from``, the fill, its indexes, then the probed upgrade to head."""
    if revision(engine) is None:
        upgrade(engine, args.start)
    report["schema_filled"] = revision(engine)
    drop_indexes(engine)
    report["fill_s"] = fill(engine, args.docs, args.sources, args.chunk)
    with engine.connect() as conn:
        if conn.execute(text("SELECT to_regclass('bench_ddl')")).scalar() is not None:
            report["index_build_and_analyze_s"] = rebuild_indexes(engine)
    report["migrate_from"] = revision(engine)
    if args.before_src and not args.no_cli:
        report["cli_before"] = cli_status(url, args.sources, 3, args.before_src)
    report["migrate"] = probed_upgrade(engine, "head")
    report["migrated_to"] = revision(engine)


def measure(engine: Engine, url: str, args: argparse.Namespace, report: dict[str, Any]) -> None:
    """Table sizes, then each call ``--repeat`` times (the slow legacy ones fewer)."""
    with engine.connect() as conn:
        report["sizes"] = {
            t: conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one() for t in BIG
        }
        report["db_bytes"] = conn.execute(
            text("SELECT pg_database_size(current_database())")
        ).scalar_one()
    report["timings"] = {
        label: timed(call, args.repeat)
        for label, call in calls(url, args.docs, args.sources).items()
    }
    few = max(3, args.repeat // 4)
    for label, call in legacy(url, args.sources).items():
        report["timings"][label] = timed(call, few)
    if not args.no_cli:
        label = "`headwater status --json` (process)"
        report["timings"][label] = cli_status(url, args.sources, few)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--sources", type=int, default=20)
    parser.add_argument("--chunk", type=int, default=500_000)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--db", default="")
    parser.add_argument("--from", dest="start", default="0019", help="schema the fill runs on")
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    parser.add_argument("--no-cli", action="store_true", help="skip `headwater status` runs")
    parser.add_argument("--out", default="")
    parser.add_argument("--before-src", default="", help="time the CLI on this src first")
    args = parser.parse_args()
    name = args.db or f"hw_pg10m_scale_{args.docs}"
    url = ensure_database(name)
    engine = create_engine(url)
    report: dict[str, Any] = {"docs": args.docs, "sources": args.sources, "db": name}
    try:
        prepare(engine, url, args, report)
        measure(engine, url, args, report)
    finally:
        engine.dispose()
        if not args.keep:
            drop_database(name)
    report["load"] = os.getloadavg()
    print(json.dumps({k: v for k, v in report.items() if k != "timings"}, indent=1))
    print("\n| call | p50 ms | p95 ms | max ms |\n| --- | ---: | ---: | ---: |")
    for label, t in report["timings"].items():
        print(f"| {label} | {t['p50_ms']:.1f} | {t['p95_ms']:.1f} | {t['max_ms']:.1f} |")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
