"""Search p50/p95 through ``headwater serve`` (N concurrent clients) vs the Python API,
on the same index, and the ingestion rate of the push batch endpoint.

    PYTHONPATH=src .venv/bin/python bench/api_search.py [--seconds 60] [--clients 20] [--docs 2000]

Builds a workspace under a temp dir (fake embedder, one push source), ingests --docs
documents through ``POST /v1/sources/{id}/documents:batch`` (500 per request), waits for
indexing, then runs the search load. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "api"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from api_support import KEYS, Server, make_workspace, server_env

from ports import free_port

WORDS = [
    "river",
    "delta",
    "basin",
    "spring",
    "brook",
    "creek",
    "estuary",
    "tide",
    "current",
    "flood",
    "drought",
    "lake",
]


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--docs", type=int, default=2000)
    args = ap.parse_args()
    rng = random.Random(7)
    root = Path(tempfile.mkdtemp(prefix="hw-api-bench-"))
    srv = Server(make_workspace(root), free_port(), root / "server.log").start()
    out: dict[str, object] = {"docs": args.docs, "clients": args.clients, "seconds": args.seconds}
    try:
        ingest = srv.client("ingest")
        started = time.perf_counter()
        for first in range(0, args.docs, 500):
            ops = [
                {
                    "object_id": f"doc/{n}",
                    "version": 1,
                    "access": {"public": True},
                    "text": " ".join(rng.choices(WORDS, k=120)),
                }
                for n in range(first, min(first + 500, args.docs))
            ]
            r = ingest.post("/v1/sources/inbox/documents:batch", json={"operations": ops})
            r.raise_for_status()
        out["ingest_docs_per_s"] = round(args.docs / (time.perf_counter() - started), 1)
        admin = srv.client("admin")
        while admin.get("/v1/indexes").json()["indexes"]["main"]["pending"]:
            time.sleep(0.2)
        out["ingest_and_index_s"] = round(time.perf_counter() - started, 1)
        latencies: list[float] = []
        lock = threading.Lock()
        stop = time.monotonic() + args.seconds

        def client() -> None:
            local = random.Random()
            with httpx.Client(
                base_url=srv.url, timeout=30, headers={"Authorization": f"Bearer {KEYS['backend']}"}
            ) as c:
                while time.monotonic() < stop:
                    q = " ".join(local.sample(WORDS, 2))
                    t0 = time.perf_counter()
                    c.post("/v1/search", json={"query": q, "k": 10}).raise_for_status()
                    with lock:
                        latencies.append(time.perf_counter() - t0)

        threads = [threading.Thread(target=client) for _ in range(args.clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        out["api"] = {
            "searches": len(latencies),
            "p50_ms": round(pct(latencies, 0.5), 1),
            "p95_ms": round(pct(latencies, 0.95), 1),
            "qps": round(len(latencies) / args.seconds, 1),
        }
    finally:
        srv.stop()
    import os

    from headwater.api.service import open_workspace

    os.environ.update(server_env())

    with open_workspace(srv.config) as ws:
        direct: list[float] = []
        stop = time.monotonic() + min(args.seconds, 20.0)
        while time.monotonic() < stop:
            q = " ".join(rng.sample(WORDS, 2))
            t0 = time.perf_counter()
            ws.search(q, k=10)
            direct.append(time.perf_counter() - t0)
        out["python_api_one_thread"] = {
            "searches": len(direct),
            "p50_ms": round(statistics.median(direct) * 1000, 1),
            "p95_ms": round(pct(direct, 0.95), 1),
        }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
