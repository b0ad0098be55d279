"""CPU per search when many threads of one process search at once, and when at most a few
of them may (what ``[api] search_threads`` does in each ``serve`` worker).

The idea: a ``serve`` worker answers 25 clients on 25 threads that take turns at one
interpreter; this measures what that costs the search itself, without HTTP and without the
load generator on the same cores. Opens a workspace ``api_load.py --keep`` left, warms it
with ``--warmup`` searches of ``search_cpu.py``'s mix, then for each ``--rounds`` runs
every ``--configs`` entry over the next ``--searches`` searches of the mix: ``T`` is T
threads sharing them, ``T:L`` the same with at most L searching at once. Prints the
process CPU per search of each, and the medians.

    PYTHONPATH=src HF_HUB_OFFLINE=1 .venv/bin/python bench/search_threads.py "$WORKSPACE" \
        --configs 1,25,25:1,25:2 --rounds 3
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "api"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from api_support import KEYS
from search_cpu import queries

from headwater.workspace import Workspace

Body = dict[str, object]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workspace", type=Path, help="a workspace bench/api_load.py kept")
    parser.add_argument("--configs", default="1,25,25:1,25:2", help="T or T:L, comma-separated")
    parser.add_argument("--searches", type=int, default=1500)
    parser.add_argument("--warmup", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    for role in ("admin", "ingest", "search", "backend"):
        os.environ.setdefault(f"HW_{role.upper()}_KEY", KEYS[role])
    workspace = Workspace.open(args.workspace / "headwater.toml")
    configs = args.configs.split(",")
    bodies = queries(args.warmup + args.rounds * len(configs) * args.searches, args.seed)
    search_all(workspace, bodies[: args.warmup], 1, None)
    spent: dict[str, list[float]] = {config: [] for config in configs}
    offset = args.warmup
    for round_number in range(1, args.rounds + 1):
        for config in configs:
            threads, _, limit = config.partition(":")
            part = bodies[offset : offset + args.searches]
            offset += args.searches
            start = time.process_time()
            search_all(workspace, part, int(threads), int(limit) if limit else None)
            spent[config].append((time.process_time() - start) / len(part) * 1000)
            print(f"round {round_number} {config:>6}: {spent[config][-1]:.2f} ms of CPU a search")
    for config, values in spent.items():
        print(f"median {config:>6}: {statistics.median(values):.2f} ms of CPU a search")
    return 0


def search_all(workspace: Workspace, bodies: list[Body], threads: int, limit: int | None) -> None:
    """Search ``bodies`` on ``threads`` threads, at most ``limit`` of them at once."""
    gate = threading.BoundedSemaphore(limit) if limit else None

    def run(part: list[Body]) -> None:
        for body in part:
            groups = [str(g) for g in body["groups"]]  # type: ignore[attr-defined]
            with gate or contextlib.nullcontext():
                workspace.search(str(body["query"]), user=str(body["user"]), groups=groups)

    workers = [threading.Thread(target=run, args=(bodies[i::threads],)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


if __name__ == "__main__":
    raise SystemExit(main())
