"""The no-op re-sync of a SQL table and of an S3 bucket at scale, against their listings.

The idea: as ``bench/noop.py`` does for a tree, a re-sync of a source in which nothing
changed downloads nothing new; what it costs is the source's listing (every row of the
table in keyset pages; every key of the bucket, 1,000 a ``ListObjectsV2`` page) plus the
manifest's comparison and bookkeeping. So the figure that matters is the no-op's
documents/s, and its ratio to a plain child process that does only that listing (issue
29 goal 1: ≥ 50,000 docs/s).

``--source sql``: database ``hw_bench_noop_sql_<N>`` on the local PostgreSQL (``HW_BENCH_PG``)
with table ``notes(id, title, body)`` of ``--rows`` rows, filled by one ``INSERT ... SELECT
generate_series``; the listing limit is a child process running the connector's own
statement (``SELECT id, title, body FROM notes WHERE id IS NOT NULL AND id > :last ORDER
BY id LIMIT 1000``, page after page) through a psycopg server-side cursor with
``fetchmany(500)``, on one connection (the connector opens one per page), counting rows.

``--source s3``: moto's S3 API served by werkzeug in a child process on ``--port`` (as the
tests serve it), which puts ``--objects`` small Markdown objects itself, either straight
into moto's backend (``--fill backend``, the default: 10,000–18,000 objects/s here, 2,000
in 0.8 s) or over HTTP from 8 threads with one boto3 client each (``--fill http``: ~140
objects/s, 2,000 in 14 s). moto keeps everything in memory, so every run fills again, with
the same bytes, hence the same ETags the prepared manifest holds (every ``LastModified``
is set to 2026-01-01, which the listing's metadata carries; an untimed settling sync
precedes the measured ones). The listing limit is a child process walking a boto3
``list_objects_v2`` paginator (1,000 keys a page) and counting keys.

Steps, resumable where cheap: the data (the table is kept when it holds ``N`` rows); the
workspace ``bench/out/noop-<source>-ws-<N>-<manifest>`` (one source, fake embedder, one
``sqlite`` index, ``--no-index`` syncs) and its untimed initial sync (``os.fsync`` a
no-op, ``--prepare-bulk`` as in ``bench/noop.py``), kept once done; then ``--repeats``
times the listing, then a no-op ``headwater sync --json --no-index``, each a child process
(``measure.run_measured``: wall, CPU, the child's own peak RSS). The servers' own CPU
(PostgreSQL, moto in this process) is in neither child's CPU time. ``--profile`` runs
one more no-op under cProfile in a child process and prints where its time goes.

    PYTHONPATH=src nice .venv/bin/python bench/noop_sources.py --source sql --rows 100000
    PYTHONPATH=src nice .venv/bin/python bench/noop_sources.py --source s3 --objects 20000

Raw figures: ``bench/out/noop-<source>-<N>-<manifest>.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from measure import markdown_table, run_measured, write_json  # noqa: E402
from noop import PG, WORDS, WORKSPACE, report_of, sync, text_of, vacuum  # noqa: E402

OUT = HERE / "out"
SQL_SOURCE = """\
[[source]]
id = "rows"
type = "sql"
url = "{url}"
table = "notes"
id_columns = ["id"]
title_column = "title"
content_template = "{{body}}"
media_type = "text/markdown"
access = {{ public = true }}
"""
S3_SOURCE = """\
[[source]]
id = "bucket"
type = "s3"
bucket = "{bucket}"
endpoint_url = "{endpoint}"
region = "us-east-1"
addressing_style = "path"
access_key_id = "test"
secret_access_key = "test"
access = {{ public = true }}
"""
SQL_LISTING = """\
import json, sys, time, psycopg
t = time.perf_counter()
n, last = 0, None
with psycopg.connect(sys.argv[1], options="-c timezone=UTC") as conn:
    while True:
        with conn.cursor(name="hw") as cur:
            where = "" if last is None else " AND id > %s"
            cur.execute("SELECT id, title, body FROM notes WHERE id IS NOT NULL" + where
                        + " ORDER BY id LIMIT 1000", () if last is None else (last,))
            page = 0
            while rows := cur.fetchmany(500):
                page += len(rows)
                last = rows[-1][0]
        conn.commit()
        n += page
        if page < 1000:
            break
print(json.dumps({"items": n, "listing_s": time.perf_counter() - t}))
"""
S3_LISTING = """\
import json, sys, time, boto3
t = time.perf_counter()
s3 = boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1",
                  aws_access_key_id="test", aws_secret_access_key="test")
n = 0
for page in s3.get_paginator("list_objects_v2").paginate(Bucket=sys.argv[2],
                                                          PaginationConfig={"PageSize": 1000}):
    n += len(page.get("Contents", []))
print(json.dumps({"items": n, "listing_s": time.perf_counter() - t}))
"""
PROFILE = """\
import cProfile, os, pstats, sys
os.chdir(sys.argv[1])
sys.argv = ["headwater", "sync", "--json", "--no-index"]
import importlib
app = importlib.import_module("headwater.cli.app")
app.exit_now = lambda code: sys.exit(code)
prof = cProfile.Profile()
try:
    prof.runcall(app.main)
except SystemExit:
    pass
prof.dump_stats(os.environ["HW_PROFILE_OUT"])
"""


def admin_database(name: str, fresh: bool) -> tuple[str, bool]:
    """Create database ``name`` when missing (dropped first with ``fresh``); its URL and
    whether it was created now."""
    from sqlalchemy import create_engine, text

    admin = create_engine(f"{PG}/postgres", isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        if fresh:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        found = conn.execute(text("SELECT 1 FROM pg_database WHERE datname = :n"), {"n": name})
        created = found.first() is None
        if created:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return f"{PG}/{name}", created


def fill_table(url: str, rows: int) -> float:
    """``notes`` with ``rows`` rows (kept when it already holds them); the seconds spent."""
    from sqlalchemy import create_engine, text

    started = time.perf_counter()
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(
            text("CREATE TABLE IF NOT EXISTS notes (id bigint PRIMARY KEY, title text, body text)")
        )
        if conn.execute(text("SELECT count(*) FROM notes")).scalar_one() != rows:
            conn.execute(text("TRUNCATE notes"))
            conn.execute(
                text(
                    "INSERT INTO notes SELECT g, 'note ' || g, '# note ' || g || E'\\n\\n' || "
                    "'alpha bravo charlie ' || md5(g::text) || ' ' || g || E'\\n' "
                    "FROM generate_series(0, :n - 1) AS g"
                ),
                {"n": rows},
            )
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM ANALYZE notes"))
    engine.dispose()
    return time.perf_counter() - started


MOTO = """\
import datetime, json, logging, sys, threading, time
from concurrent.futures import ThreadPoolExecutor
import boto3
from moto.core import DEFAULT_ACCOUNT_ID
from moto.s3.models import s3_backends
from moto.server import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import make_server
port, bucket, objects, how = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
logging.getLogger("werkzeug").setLevel(logging.WARNING)
app = DomainDispatcherApplication(create_backend_app)
httpd = make_server("127.0.0.1", port, app, threaded=True)
threading.Thread(target=httpd.serve_forever, daemon=True).start()
endpoint = f"http://127.0.0.1:{port}"
def client():
    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                        aws_access_key_id="test", aws_secret_access_key="test")
started = time.perf_counter()
client().create_bucket(Bucket=bucket)
if how == "backend":
    backend = s3_backends[DEFAULT_ACCOUNT_ID]["global"]
    for i in range(objects):
        backend.put_object(bucket, key_of(i), text_of(i).encode())
else:
    local = threading.local()
    def put(i):
        if not hasattr(local, "c"):
            local.c = client()
        local.c.put_object(Bucket=bucket, Key=key_of(i), Body=text_of(i).encode())
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(put, range(objects), chunksize=256))
# one fixed LastModified: a refill then lists exactly what the prepared manifest holds
moment = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
backend = s3_backends[DEFAULT_ACCOUNT_ID]["global"]
for i in range(objects):
    backend.get_object(bucket, key_of(i)).last_modified = moment
print(json.dumps({"fill_s": time.perf_counter() - started}), flush=True)
sys.stdin.read()  # serve until the bench closes our stdin
httpd.shutdown()
"""


@contextmanager
def moto_server(port: int, bucket: str, objects: int, how: str) -> Iterator[tuple[str, float]]:
    """moto's S3 API on 127.0.0.1:``port`` in a child process (so this process stays small:
    a child's peak RSS counts its parent's at the fork), filled with ``objects`` small
    objects by that process (``how``: moto's backend directly, or 8 threads with a boto3
    client each over HTTP); yields the endpoint and the seconds the fill took."""
    import inspect

    helpers = inspect.getsource(key_of) + inspect.getsource(text_of) + f"WORDS = {WORDS!r}\n"
    argv = [str(port), bucket, str(objects), how]
    server = subprocess.Popen(
        [sys.executable, "-c", helpers + MOTO, *argv],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = server.stdout.readline() if server.stdout else ""
        if not line:
            raise RuntimeError("the moto server exited before it was filled")
        yield f"http://127.0.0.1:{port}", float(json.loads(line)["fill_s"])
    finally:
        if server.stdin:
            server.stdin.close()
        server.wait(timeout=60)


def key_of(i: int) -> str:
    return f"notes/d{i // 1000:03d}/n{i:07d}.md"


def listing(script: str, *argv: str) -> dict[str, Any]:
    """The plain listing in a child process."""
    measured = run_measured([sys.executable, "-c", script, *argv])
    found = measured.last_json()
    return {
        "items": found["items"],
        "listing_s": round(found["listing_s"], 3),
        "wall_s": measured.wall_s,
        "cpu_s": measured.cpu_s,
        "peak_rss_mb": measured.peak_rss_mb,
        "load": measured.load_before,
    }


def profile(work: Path, out: Path) -> None:
    """One no-op under cProfile (a child process); prints the top of both orders."""
    import pstats

    run_measured([sys.executable, "-c", PROFILE, str(work)], env={"HW_PROFILE_OUT": str(out)})
    stats = pstats.Stats(str(out))
    stats.sort_stats("tottime").print_stats(25)
    stats.sort_stats("cumulative").print_stats(40)


def measure(args: argparse.Namespace, work: Path, script: str, argv: list[str]) -> None:
    """The interleaved listings and no-ops, the summary and its table."""
    count = args.rows if args.source == "sql" else args.objects
    lists: list[dict[str, Any]] = []
    noops: list[dict[str, Any]] = []
    if args.source == "s3":
        # untimed: a workspace prepared before LastModified was pinned (or by another
        # fill) takes the new listing's metadata once; nothing is downloaded
        settle = report_of(sync(work, True))
        args.result["settle"] = settle
        print(f"settling sync: {settle.get('counts')}", flush=True)
    for repeat in range(args.repeats):
        if args.manifest == "postgresql":
            vacuum(args.manifest_url)  # not timed, as autovacuum would
        lists.append(listing(script, *argv))
        measured = sync(work, True)
        rep = report_of(measured)
        noops.append(
            {
                "wall_s": measured.wall_s,
                "cpu_s": measured.cpu_s,
                "duration_s": rep.get("duration_s"),
                "peak_rss_mb": measured.peak_rss_mb,
                "load": measured.load_before,
                "load_after": measured.load_after,
                "report": rep,
            }
        )
        print(
            f"no-op {repeat + 1}: {measured.wall_s:.1f} s wall, {measured.cpu_s:.1f} CPU-s, "
            f"load {measured.load_before}; listing {lists[-1]['wall_s']:.1f} s",
            flush=True,
        )
    if args.profile:
        profile(work, OUT / f"noop-{args.source}-{count}-{args.manifest}.prof")
    if not noops:
        return
    lists.append(listing(script, *argv))
    items = lists[0]["items"]
    list_wall = statistics.median(x["wall_s"] for x in lists)
    list_cpu = statistics.median(x["cpu_s"] for x in lists)
    wall = statistics.median(n["wall_s"] for n in noops)
    cpu = statistics.median(n["cpu_s"] for n in noops)
    durations = [n["duration_s"] for n in noops if n["duration_s"]]
    duration = statistics.median(durations) if durations else None
    summary = {
        "source": args.source,
        "items": items,
        "manifest": args.manifest,
        "listing_docs_per_s": round(items / list_wall),
        "listing_cpu_docs_per_s": round(items / list_cpu),
        "noop_wall_s": wall,
        "noop_cpu_s": cpu,
        "noop_docs_per_s": round(items / wall),
        "noop_run_docs_per_s": round(items / duration) if duration else None,
        "noop_cpu_docs_per_s": round(items / cpu),
        "ratio_to_listing": round(list_wall / wall, 3),
        "cpu_ratio_to_listing": round(list_cpu / cpu, 3),
        "noop_peak_rss_mb": max(n["peak_rss_mb"] for n in noops),
        "listing_peak_rss_mb": max(x["peak_rss_mb"] for x in lists),
        "load": [n["load"] for n in noops] + [noops[-1]["load_after"]],
        "unchanged": [n["report"].get("counts", {}).get("unchanged") for n in noops],
    }
    table = markdown_table(
        [
            "source",
            "items",
            "manifest",
            "listing docs/s (wall / CPU)",
            "no-op wall s",
            "run docs/s",
            "no-op CPU s",
            "CPU docs/s",
            "÷ listing (wall / CPU)",
            "peak RSS MB",
            "load",
        ],
        [
            [
                args.source,
                items,
                args.manifest,
                f"{summary['listing_docs_per_s']:,} / {summary['listing_cpu_docs_per_s']:,}",
                wall,
                summary["noop_run_docs_per_s"],
                cpu,
                summary["noop_cpu_docs_per_s"],
                f"{summary['ratio_to_listing']} / {summary['cpu_ratio_to_listing']}",
                summary["noop_peak_rss_mb"],
                f"{min(summary['load'])}–{max(summary['load'])}",
            ]
        ],
    )
    out = args.out or OUT / f"noop-{args.source}-{count}-{args.manifest}.json"
    args.result.update(
        date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        machine=f"{os.cpu_count()} cores",
        summary=summary,
        noops=noops,
        listings=lists,
    )
    write_json(out, args.result)
    out.with_suffix(".md").write_text(table + "\n")
    print("\n" + table + f"\n\nraw: {out}")


def prepare(args: argparse.Namespace, work: Path, source: str) -> None:
    """The workspace and its untimed initial sync (kept once done)."""
    if args.fresh and work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    if args.manifest == "sqlite":
        args.manifest_url = "sqlite:///.headwater/manifest.db"
    else:
        count = args.rows if args.source == "sql" else args.objects
        name = f"hw_bench_noop_{args.source}_{count}_manifest"
        args.manifest_url, _ = admin_database(name, args.fresh)
    (work / "headwater.toml").write_text(WORKSPACE.format(manifest_url=args.manifest_url) + source)
    initial_file = work / "initial.json"
    if initial_file.exists():
        args.result["initial"] = json.loads(initial_file.read_text())
        print("initial sync: done before, skipped", flush=True)
        return
    print("initial sync ...", flush=True)
    first = sync(work, True, no_fsync=True, bulk=args.prepare_bulk)
    initial = {
        "bulk": args.prepare_bulk,
        "wall_s": first.wall_s,
        "cpu_s": first.cpu_s,
        "peak_rss_mb": first.peak_rss_mb,
        "load": [first.load_before, first.load_after],
        "report": report_of(first),
    }
    print(f"initial sync: {first.wall_s:.1f} s wall, {first.cpu_s:.1f} CPU-s", flush=True)
    initial_file.write_text(json.dumps(initial, indent=2, default=str))
    args.result["initial"] = initial


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", choices=["sql", "s3"], required=True)
    parser.add_argument("--rows", type=int, default=100_000, help="rows of the table (sql)")
    parser.add_argument("--objects", type=int, default=20_000, help="objects (s3)")
    parser.add_argument("--manifest", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--repeats", type=int, default=3, help="no-ops measured (median)")
    parser.add_argument("--fill", choices=["backend", "http"], default="backend")
    parser.add_argument("--port", type=int, default=39517, help="moto's port (kept in config)")
    parser.add_argument("--fresh", action="store_true", help="a new workspace and databases")
    parser.add_argument("--prepare-bulk", action="store_true", help="as in bench/noop.py")
    parser.add_argument("--profile", action="store_true", help="one more no-op, cProfiled")
    parser.add_argument("--out", type=Path, help="the JSON file (default bench/out/)")
    args = parser.parse_args()
    args.result = {"load_start": os.getloadavg()[0]}
    if args.source == "sql":
        url, _ = admin_database(f"hw_bench_noop_sql_{args.rows}", args.fresh)
        filled = fill_table(url, args.rows)
        args.result["fill_s"] = round(filled, 1)
        print(f"table: {args.rows:,} rows ready in {filled:.1f} s", flush=True)
        raw = url.replace("postgresql+psycopg://", "postgresql://")
        work = OUT / f"noop-sql-ws-{args.rows}-{args.manifest}"
        prepare(args, work, SQL_SOURCE.format(url=raw))
        measure(args, work, SQL_LISTING, [raw])
        return
    bucket = f"hw-bench-noop-{args.objects}"
    with moto_server(args.port, bucket, args.objects, args.fill) as (endpoint, filled):
        args.result.update(fill_s=round(filled, 1), fill=args.fill)
        print(f"bucket: {args.objects:,} objects put ({args.fill}) in {filled:.1f} s", flush=True)
        work = OUT / f"noop-s3-ws-{args.objects}-{args.manifest}"
        prepare(args, work, S3_SOURCE.format(bucket=bucket, endpoint=endpoint))
        measure(args, work, S3_LISTING, [endpoint, bucket])


if __name__ == "__main__":
    main()
