"""Server CPU per search, one client at a time, over a workspace ``api_load.py`` kept.

The idea: under 50 closed-loop clients the latency is the queue (Little's law), so what a
change to the search path buys shows as the server's CPU per search. This runs
``headwater serve --workers 1`` over a kept ``bench/api_load.py --keep`` workspace (the
same 100,000 chunks, ACLs and query mix), sends ``--searches`` searches one after another
after a warm-up, and prints the server's user + system CPU per search. ``--pythonpath``
runs the server on another copy of the code (a ``before`` copy of ``src``), so two
versions are compared on one index in one sitting.

    PYTHONPATH=src .venv/bin/python bench/api_load.py --manifest sqlite --seconds 0 --keep
    # WORKSPACE: the "workspace" path api_load.py printed
    PYTHONPATH=src .venv/bin/python bench/search_cpu.py "$WORKSPACE" \
        --pythonpath src,bench/out/before/src --rounds 2
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "api"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from api_load import CALLERS
from api_support import KEYS
from corpus import _TOPIC_TERMS, _VOCAB, TOPICS

from ports import free_port

# Every (user, caller) pair of the mix once: each ACL expression's share is then known, as
# it is in a server that has been answering a while (the wide caller plans by it).
WARMUP = 150


def queries(n: int, seed: int) -> list[dict[str, object]]:
    """``n`` search bodies of ``api_load.py``'s mix: a topic term and two common words,
    the three callers in turn."""
    rng, names = random.Random(seed), list(CALLERS)
    bodies: list[dict[str, object]] = []
    for i in range(n):
        topic = rng.randrange(TOPICS)
        words = [rng.choice(_TOPIC_TERMS[topic]), *rng.sample(_VOCAB[130:400], 2)]
        groups = CALLERS[names[i % len(names)]]
        bodies.append({"query": " ".join(words), "k": 10, "user": f"u{i % 50}@bench.test"})
        bodies[-1]["groups"] = groups
    return bodies


def server_cpu(process: psutil.Process) -> float:
    """User + system seconds of the server and its children (uvicorn's worker)."""
    total = sum(process.cpu_times()[:2])
    for child in process.children(recursive=True):
        with contextlib.suppress(psutil.Error):  # a child that just ended
            total += sum(child.cpu_times()[:2])
    return total


def measure(workspace: Path, pythonpath: str, searches: int, seed: int) -> dict[str, float]:
    """Start the server on ``pythonpath``'s code, search, stop; CPU and wall per search."""
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(Path(pythonpath).resolve()),
        "HF_HUB_OFFLINE": "1",
        "HW_ADMIN_KEY": KEYS["admin"],
        "HW_INGEST_KEY": KEYS["ingest"],
        "HW_BACKEND_KEY": KEYS["backend"],
    }
    command = [sys.executable, "-m", "headwater", "-c", str(workspace / "headwater.toml")]
    command += ["serve", "--port", str(port), "--workers", "1"]
    log = (workspace / "search_cpu.log").open("ab")
    server = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code < 500:
                    break
            except httpx.HTTPError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError(f"the server did not start; see {log.name}") from None
            time.sleep(0.1)
        bodies = queries(WARMUP + searches, seed)
        headers = {"Authorization": f"Bearer {KEYS['backend']}"}
        with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
            for body in bodies[:WARMUP]:
                client.post("/v1/search", json=body).raise_for_status()
            process = psutil.Process(server.pid)
            cpu0, wall0 = server_cpu(process), time.perf_counter()
            for body in bodies[WARMUP:]:
                client.post("/v1/search", json=body).raise_for_status()
            wall, cpu = time.perf_counter() - wall0, server_cpu(process) - cpu0
    finally:
        server.terminate()
        server.wait(timeout=60)
        log.close()
    return {"cpu_ms": cpu / searches * 1000, "wall_ms": wall / searches * 1000}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workspace", type=Path, help="a workspace bench/api_load.py kept")
    parser.add_argument("--pythonpath", default="src", help="comma-separated code copies")
    parser.add_argument("--searches", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=1, help="each copy measured this often")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    print("| round | code | server CPU ms/search | wall ms/search | load |")
    print("| --- | --- | ---: | ---: | ---: |")
    for round_ in range(1, args.rounds + 1):
        for path in args.pythonpath.split(","):
            got = measure(args.workspace, path, args.searches, args.seed)
            load = os.getloadavg()[0]
            print(
                f"| {round_} | {path} | {got['cpu_ms']:.1f} | {got['wall_ms']:.1f} | {load:.2f} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
