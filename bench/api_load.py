"""The HTTP API under load (issue 29 goal 4): ``serve --workers 2`` over a 100k-chunk index.

The idea: measure what a deployment sees, end to end. The index is built the way a user
builds one without a model in the way: ``--docs`` documents of ``--sections`` Markdown
sections each (one chunk per section) pushed through ``POST /v1/sources/{id}/documents:batch``
(``--batch`` operations per request) with the fake embedder, each with its own ACL (10%
public, 1% in group ``narrow``, the rest over 20 groups, as in ``sink_search.py``). The push
rate is documents committed per second: acknowledged by the server, then counted in the
manifest. Once the background drains have indexed everything, ``--clients`` concurrent
clients (one asyncio event loop in this process; ``--client lean``, the default, is
``raw_http.py``: 0.26 ms of CPU a search against httpx's 2.4-2.6, on the server's own
cores) search as callers whose groups see different shares of the index; p50/p95/p99 and
searches/s come from the requests completed in ``--seconds`` after a warm-up, and
``connections_per_worker`` says how the clients' connections sat on the workers halfway
through (``serve`` keeps each worker at its share: ``api/balance.py``). ``--reuse``
searches a workspace a ``--keep`` run left, without ingesting again. ``--manifest`` runs it
on SQLite, PostgreSQL (a fresh database from ``bench/pgdb.py``) or both, each in a fresh
workspace.

    PYTHONPATH=src HF_HUB_OFFLINE=1 .venv/bin/python bench/api_load.py \
        --manifest sqlite,postgres --docs 10000 --clients 50 --seconds 60
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import shutil
import sqlite3
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "api"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from api_support import KEYS, Server
from corpus import _TOPIC_TERMS, _VOCAB, TOPICS
from measure import percentile
from pgdb import PG, database
from raw_http import HTTPStatusError, RawClient
from sqlalchemy import create_engine, text

from ports import free_port

GROUPS = 20
CONFIG = """
[workspace]
tenant = "bench"

[embedder]
type = "fake"
{manifest}
[[source]]
id = "inbox"
type = "push"

[[api.keys]]
name = "ops"
secret = "${{HW_ADMIN_KEY}}"
role = "admin"

[[api.keys]]
name = "loader"
secret = "${{HW_INGEST_KEY}}"
role = "ingest"
sources = ["inbox"]

[[api.keys]]
name = "backend"
secret = "${{HW_BACKEND_KEY}}"
role = "search"
assert_principals = true
"""

# Whom the clients search as (each request picks one in turn) and the share each sees.
CALLERS: dict[str, list[str]] = {
    "narrow (1 group + public, ~11%)": ["narrow"],
    "broad (2 groups + public, ~19%)": ["g03", "g11"],
    "wide (10 groups + public, ~55%)": [f"g{g:02d}" for g in range(0, GROUPS, 2)],
}


def access_of(rng: random.Random) -> dict[str, Any]:
    share = rng.random()
    if share < 0.10:
        return {"public": True}
    if share < 0.11:
        return {"groups": ["narrow"]}
    return {"groups": [f"g{rng.randrange(GROUPS):02d}"]}


def document(rng: random.Random, n: int, sections: int) -> dict[str, Any]:
    """One pushed document: ``sections`` headed sections of 90-140 words (one chunk each)."""
    topic = rng.randrange(TOPICS)
    parts = [f"# Report {n}"]
    for s in range(sections):
        words = rng.choices(_VOCAB[:400], k=rng.randint(90, 140))
        for _ in range(6):
            words[rng.randrange(len(words))] = rng.choice(_TOPIC_TERMS[topic])
        parts.append(f"## Section {s} of {n}\n\n" + " ".join(words) + ".")
    return {
        "object_id": f"doc/{n}",
        "version": 1,
        "title": f"Report {n}",
        "text": "\n\n".join(parts),
        "media_type": "text/markdown",
        "access": access_of(rng),
    }


def write_config(root: Path, manifest_url: str | None) -> Path:
    section = f'\n[manifest]\nurl = "{manifest_url}"\n' if manifest_url else ""
    config = root / "headwater.toml"
    config.write_text(CONFIG.format(manifest=section))
    return config


def load_avg() -> float:
    return round(os.getloadavg()[0], 2)


def cpu_of(pid: int) -> float:
    """User + system CPU seconds of ``pid`` and its children (uvicorn's workers)."""
    proc = psutil.Process(pid)
    total = 0.0
    for p in [proc, *proc.children(recursive=True)]:
        with contextlib.suppress(psutil.NoSuchProcess):
            t = p.cpu_times()
            total += t.user + t.system
    return total


def _push_all(srv: Server, bodies: list[list[dict[str, Any]]], pushers: int) -> int:
    """Send every batch, ``pushers`` requests in flight; the documents acknowledged new."""

    def send(mine: list[list[dict[str, Any]]]) -> int:
        acknowledged = 0
        with srv.client("ingest") as c:
            for ops in mine:
                r = c.post(
                    "/v1/sources/inbox/documents:batch", json={"operations": ops}, timeout=600
                )
                r.raise_for_status()
                acknowledged += sum(x["status"] == "new" for x in r.json()["results"])
        return acknowledged

    with ThreadPoolExecutor(pushers) as pool:
        return sum(pool.map(send, [bodies[i::pushers] for i in range(pushers)]))


def ingest(srv: Server, args: argparse.Namespace) -> dict[str, Any]:
    """Push ``--docs`` documents in batches; docs/s committed, then wait for the index."""
    rng = random.Random(args.seed)
    bodies = [
        [document(rng, n, args.sections) for n in range(first, min(first + args.batch, args.docs))]
        for first in range(0, args.docs, args.batch)
    ]  # built before the clock starts: the load generator's own cost is not the server's
    pid = srv.process.pid  # type: ignore[union-attr]
    cpu0, load0 = cpu_of(pid), load_avg()
    started = time.perf_counter()
    acknowledged = _push_all(srv, bodies, args.pushers)
    pushed_s = time.perf_counter() - started
    push_cpu = cpu_of(pid) - cpu0
    with srv.client("admin") as admin:
        sources = admin.get("/v1/sources").json()["sources"]
        in_manifest = next(s["documents"] for s in sources if s["id"] == "inbox")
        while admin.get("/v1/indexes").json()["indexes"]["main"]["pending"]:
            time.sleep(0.5)
    indexed_s = time.perf_counter() - started
    return {
        "docs": args.docs,
        "batch": args.batch,
        "pushers": args.pushers,
        "acknowledged_new": acknowledged,
        "in_manifest": in_manifest,
        "push_s": round(pushed_s, 2),
        "docs_per_s_committed": round(min(acknowledged, in_manifest) / pushed_s, 1),
        "server_cpu_s_while_pushing": round(push_cpu, 1),  # the drains' indexing included
        "indexed_s": round(indexed_s, 1),
        "server_cpu_s_to_indexed": round(cpu_of(pid) - cpu0, 1),
        "load_before": load0,
        "load_after": load_avg(),
    }


def chunk_count(root: Path) -> int:
    files = sorted((root / ".headwater").rglob("*.db"))
    for path in files:
        with contextlib.closing(sqlite3.connect(path)) as db:
            names = {r[0] for r in db.execute("select name from sqlite_master where type='table'")}
            if "chunks" in names:
                return int(db.execute("select count(*) from chunks").fetchone()[0])
    return -1


def row(ts: list[float], n_hits: int, seconds: float) -> dict[str, Any]:
    """Searches, searches/s and percentiles of one set of timings (ms)."""
    if not ts:
        return {"searches": 0}
    return {
        "searches": len(ts),
        "per_s": round(len(ts) / seconds, 1),
        "p50_ms": round(percentile(ts, 50), 1),
        "p95_ms": round(percentile(ts, 95), 1),
        "p99_ms": round(percentile(ts, 99), 1),
        "mean_hits": round(n_hits / max(1, len(ts)), 2),
    }


async def _load(
    url: str, clients: int, warmup: float, seconds: float, seed: int, rate: float, lean: bool
) -> dict[str, Any]:
    timings: dict[str, list[float]] = {name: [] for name in CALLERS}
    hits: dict[str, int] = dict.fromkeys(CALLERS, 0)
    errors = 0
    names = list(CALLERS)
    begin = time.monotonic()
    measure_from, stop = begin + warmup, begin + warmup + seconds
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    headers = {"Authorization": f"Bearer {KEYS['backend']}"}

    async def client(i: int, http: httpx.AsyncClient) -> None:
        nonlocal errors
        rng = random.Random(seed * 1000 + i)
        turn = i
        lean_client = RawClient("127.0.0.1", int(url.rsplit(":", 1)[1]), headers)
        while (now := time.monotonic()) < stop:
            if rate > 0:  # think time: the clients together offer ``rate`` searches/s
                await asyncio.sleep(rng.expovariate(rate / clients))
                now = time.monotonic()
            name = names[turn % len(names)]
            turn += 1
            topic = rng.randrange(TOPICS)
            query = " ".join([rng.choice(_TOPIC_TERMS[topic]), *rng.sample(_VOCAB[130:400], 2)])
            body = {"query": query, "k": 10, "user": f"u{i}@bench.test", "groups": CALLERS[name]}
            t0 = time.perf_counter()
            try:
                if lean:
                    _, data = await lean_client.post_json("/v1/search", body)
                else:
                    r = await http.post("/v1/search", json=body)
                    r.raise_for_status()
                    data = r.content
            except (httpx.HTTPError, HTTPStatusError, OSError, asyncio.IncompleteReadError):
                errors += 1
                continue
            elapsed = time.perf_counter() - t0
            if now >= measure_from and time.monotonic() <= stop:
                timings[name].append(elapsed * 1000)
                hits[name] += len(json.loads(data)["results"])
        await lean_client.close()

    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60, limits=limits) as http:
        await asyncio.gather(*(client(i, http) for i in range(clients)))
    every = [t for ts in timings.values() for t in ts]

    return {
        "all": row(every, sum(hits.values()), seconds),
        "callers": {name: row(ts, hits[name], seconds) for name, ts in timings.items()},
        "errors": errors,
    }


def connections_per_worker(pid: int, port: int) -> list[int]:
    """The connections to ``port`` each of the server's worker processes holds now."""
    held = []
    for child in psutil.Process(pid).children(recursive=True):
        with contextlib.suppress(psutil.Error):  # a child that just ended
            if "spawn_main" in " ".join(child.cmdline()):
                held.append(
                    sum(
                        1
                        for c in child.net_connections(kind="tcp")
                        if c.status == psutil.CONN_ESTABLISHED and c.laddr and c.laddr.port == port
                    )
                )
    return sorted(held)


def search_load(srv: Server, args: argparse.Namespace, rate: float) -> dict[str, Any]:
    pid = srv.process.pid  # type: ignore[union-attr]
    cpu0, own0, load0 = cpu_of(pid), time.process_time(), load_avg()
    spread: list[list[int]] = []  # the clients' connections on each worker, mid-measurement
    timer = threading.Timer(
        args.warmup + args.seconds / 2,
        lambda: spread.append(connections_per_worker(pid, srv.port)),
    )
    timer.start()
    result = asyncio.run(
        _load(srv.url, args.clients, args.warmup, args.seconds, args.seed, rate, args.lean)
    )
    timer.cancel()
    server_cpu = cpu_of(pid) - cpu0
    answered = result["all"]["searches"] * (args.seconds + args.warmup) / args.seconds
    result |= {
        "clients": args.clients,
        "offered_per_s": rate or "closed loop (no think time)",
        "server_cpu_ms_per_search": round(server_cpu / max(1.0, answered) * 1000, 1),
        "seconds": args.seconds,
        "server_cpu_s": round(server_cpu, 1),  # warm-up included
        "connections_per_worker": spread[0] if spread else None,
        "load_generator": "lean (raw_http.py)" if args.lean else "httpx",
        "load_generator_cpu_s": round(time.process_time() - own0, 1),
        "load_before": load0,
        "load_after": load_avg(),
    }
    return result


@contextlib.contextmanager
def manifest_url(kind: str, keep: bool) -> Iterator[str | None]:
    """None for SQLite; else a fresh PostgreSQL database, dropped after unless ``keep``."""
    if kind == "sqlite":
        yield None
    elif keep:
        name = f"hw_apiload_{int(time.time())}"
        admin = create_engine(f"{PG}/postgres", isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        admin.dispose()
        yield f"{PG}/{name}"
    else:
        with database("hw_apiload") as url:
            yield url


def search_only(workspace: Path, args: argparse.Namespace) -> dict[str, Any]:
    """The search phases over a workspace an earlier ``--keep`` run left, served by this
    checkout's code (``api_support.server_env`` puts its ``src`` first): run the bench from
    another checkout to search one index with two versions in one sitting."""
    out: dict[str, Any] = {"workers": args.workers, "workspace": str(workspace), "reused": True}
    srv = Server(workspace / "headwater.toml", free_port(), workspace / "server.log")
    srv.args = ["--workers", str(args.workers)]
    srv.start(timeout=120)
    try:
        out["chunks"] = chunk_count(workspace)
        out["search"] = [search_load(srv, args, float(r)) for r in args.rate.split(",")]
    finally:
        srv.stop()
    return out


def run_one(kind: str, args: argparse.Namespace) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix=f"hw-api-load-{kind}-"))
    out: dict[str, Any] = {"manifest": kind, "workers": args.workers, "workspace": str(root)}
    try:
        with manifest_url(kind, args.keep) as url:
            config = write_config(root, url)
            srv = Server(config, free_port(), root / "server.log")
            srv.args = ["--workers", str(args.workers)]
            srv.start(timeout=120)
            try:
                out["ingest"] = ingest(srv, args)
                out["chunks"] = chunk_count(root)
                if args.seconds > 0:
                    rates = [float(r) for r in args.rate.split(",")]
                    out["search"] = [search_load(srv, args, rate) for rate in rates]
            finally:
                srv.stop()
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    return out


def report_json(report: dict[str, Any], out: Path | None) -> None:
    """Print ``report`` as JSON, and write it to ``out`` too when given."""
    text = json.dumps(report, indent=2)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
    print(text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--manifest", default="sqlite,postgres", help="sqlite, postgres or both")
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--sections", type=int, default=10, help="chunks per document")
    parser.add_argument("--batch", type=int, default=500, help="operations per push request")
    parser.add_argument("--pushers", type=int, default=2, help="push requests in flight")
    parser.add_argument("--workers", type=int, default=2, help="serve --workers")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument(
        "--rate",
        default="0",
        help="searches/s the clients offer together, one phase each "
        "(comma-separated); 0: closed loop, each client sends its next search at once",
    )
    parser.add_argument(
        "--client",
        choices=["lean", "httpx"],
        default="lean",
        help="the load generator's HTTP client: lean (raw_http.py, ~0.3 ms of CPU a "
        "search) or httpx (2.4-2.6 ms), on the server's own cores either way",
    )
    parser.add_argument(
        "--reuse",
        type=Path,
        help="search a workspace an earlier --keep run left (no ingest), with this checkout's code",
    )
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--seconds", type=float, default=60.0, help="0: ingestion only")
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument(
        "--keep", action="store_true", help="keep the workspaces (and PostgreSQL databases)"
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    args.lean = args.client == "lean"
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    if args.reuse:
        runs = [search_only(args.reuse, args)]
    else:
        runs = [run_one(kind.strip(), args) for kind in args.manifest.split(",")]
    report = {"started": started, "cpus": os.cpu_count(), "runs": runs}
    report_json(report, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
