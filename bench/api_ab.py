"""Two servers under the same closed loop, in short blocks taken in turn: A against B
when the machine's own speed wanders more than the difference looked for.

The idea: on a shared VM the same server answers 130 searches/s one minute and 210 the
next (docs/performance.md), so one long run of each side, even alternated, compares
moments more than code. Both servers start (``serve --workers N``, each on its own
workspace and with its own ``src``), both are warmed, then they take ``--rounds`` turns of
``--block`` seconds each in ABBA order (A then B, B then A, ...), only one under load at a
time: each pair of blocks ran within seconds of each other, and the report's paired
ratios (B over A, block by block) with their median are what to read. Each block's
figures are those of ``api_load.py``: searches/s, p50/p95/p99 and the server's CPU a
search. A side is ``WORKSPACE`` (served by this checkout's ``src``) or ``WORKSPACE:SRC``
(another checkout's, e.g. a ``git worktree`` of the commit before); a workspace is one
``api_load.py --keep`` left, and a copy of it (``cp -a``) with another
``headwater.toml`` compares two settings.

    PYTHONPATH=src HF_HUB_OFFLINE=1 .venv/bin/python bench/api_ab.py \\
        --a "$WORKSPACE:/tmp/before/src" --b "$WORKSPACE" --rounds 8 --block 12
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "api"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from api_load import _load, cpu_of, load_avg, report_json
from api_support import Server

from ports import free_port


def side(spec: str) -> tuple[Path, Path | None]:
    """``WORKSPACE`` or ``WORKSPACE:SRC``."""
    workspace, _, src = spec.partition(":")
    return Path(workspace), Path(src) if src else None


def block(srv: Server, args: argparse.Namespace, seconds: float, seed: int) -> dict[str, Any]:
    """One closed-loop block on ``srv``: ``api_load.py``'s row and the server's CPU."""
    pid = srv.process.pid  # type: ignore[union-attr]
    cpu0 = cpu_of(pid)
    settle = args.settle
    result = asyncio.run(_load(srv.url, args.clients, settle, seconds, seed, 0.0, True))
    row = result["all"]
    answered = row["searches"] * (seconds + settle) / seconds
    row["server_cpu_ms_per_search"] = round((cpu_of(pid) - cpu0) / max(1.0, answered) * 1e3, 2)
    row["errors"] = result["errors"]
    return dict(row)


def summary(blocks: list[dict[str, Any]]) -> dict[str, float]:
    keys = ("per_s", "p50_ms", "p95_ms", "p99_ms", "server_cpu_ms_per_search")
    return {key: round(statistics.median(b[key] for b in blocks), 2) for key in keys}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--a", required=True, help="WORKSPACE or WORKSPACE:SRC")
    parser.add_argument("--b", required=True, help="WORKSPACE or WORKSPACE:SRC")
    parser.add_argument("--workers", type=int, default=2, help="serve --workers")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=8, help="pairs of blocks, ABBA order")
    parser.add_argument("--block", type=float, default=12.0, help="seconds measured a block")
    parser.add_argument("--warmup", type=float, default=20.0, help="seconds each, first")
    parser.add_argument(
        "--settle",
        type=float,
        default=2.0,
        help="seconds unmeasured at the start of each block (the clients connect again and "
        "the workers even their connections out)",
    )
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    report: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "a": args.a,
        "b": args.b,
        "load_before": load_avg(),
    }
    blocks: dict[str, list[dict[str, Any]]] = {"a": [], "b": []}
    with ExitStack() as stack:
        servers = {}
        for name in ("a", "b"):
            workspace, src = side(getattr(args, name))
            srv = Server(workspace / "headwater.toml", free_port(), workspace / "server.log")
            srv.args, srv.src = ["--workers", str(args.workers)], src
            servers[name] = stack.enter_context(srv)
        for srv in servers.values():
            block(srv, args, args.warmup, args.seed)
        for turn in range(args.rounds):
            order = ("a", "b") if turn % 2 == 0 else ("b", "a")
            for name in order:
                blocks[name].append(block(servers[name], args, args.block, args.seed + turn))
    ratios = [b["per_s"] / a["per_s"] for a, b in zip(blocks["a"], blocks["b"], strict=True)]
    p95s = [b["p95_ms"] / a["p95_ms"] for a, b in zip(blocks["a"], blocks["b"], strict=True)]
    report |= {
        "blocks": blocks,
        "median": {name: summary(rows) for name, rows in blocks.items()},
        "b_over_a": {
            "searches_per_s": [round(r, 3) for r in ratios],
            "searches_per_s_median": round(statistics.median(ratios), 3),
            "b_faster_in": f"{sum(r > 1 for r in ratios)} of {len(ratios)} pairs",
            "p95_median": round(statistics.median(p95s), 3),
        },
        "load_after": load_avg(),
    }
    report_json(report, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
