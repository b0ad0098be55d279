"""CLI latency: ``headwater search`` (and ``status``, a no-op ``sync``) from process start to
exit, the way a user waits for it.

The idea: a search from the shell pays for Python's start, every import, opening the
workspace (config, manifest), loading the query model and the index, and printing. Each
run is a fresh process timed by ``measure.run_measured`` (wall time, the child's own CPU
time and peak RSS). The first run of each command is cold (OS page cache aside: the
prepared ONNX model already exists), the rest warm; every search asks a different query,
so the embedding cache never answers it and the model really runs (``--same-query``
measures the cached case instead).

    PYTHONPATH=src .venv/bin/python bench/cli_latency.py --runs 10
    PYTHONPATH=src .venv/bin/python bench/cli_latency.py --workspace /path/to/ws --runs 10
    # before/after: an older commit's tree (git archive) against this one, interleaved
    git archive 44c9541 src | tar -x -C /tmp/base
    PYTHONPATH=src .venv/bin/python bench/cli_latency.py --src /tmp/base/src --src src --runs 10

Without ``--workspace`` it copies the demo corpus (``examples/acme``, default embedder:
the bundled model on ONNX int8) to ``bench/out/cli-latency-ws`` and syncs it once.
The child gets ``PYTHONPATH=<--src>`` (one or more trees; with several, their runs are
interleaved so each sees the same machine load) and never ``PYTHONDONTWRITEBYTECODE``:
an installed package has its ``.pyc`` files, so a tree's modules are compiled once, in
its cold run (a tree always run with that variable set compiles ~100 of Headwater's
modules on every start, ~0.2 s more here).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure import Measured, markdown_table, run_measured, write_json

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "examples" / "acme"
QUERIES = [
    "what happens when a robot fails to dock",
    "how many vacation days do I get",
    "rotate the database credentials",
    "parental leave policy",
    "who is on call this week",
    "firmware release checklist",
    "warranty on the battery pack",
    "incident severity levels",
    "onboarding a new customer site",
    "coding standards for tests",
]


def build_workspace(python: str, env: dict[str, str]) -> Path:
    work = ROOT / "bench" / "out" / "cli-latency-ws"
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(DEMO, work, ignore=shutil.ignore_patterns(".headwater"))
    run_measured([python, "-m", "headwater", "sync"], cwd=work, env=env)
    return work


def summarize(runs: list[Measured]) -> dict[str, Any]:
    walls = [r.wall_s for r in runs]
    warm = walls[1:] or walls
    return {
        "runs": len(runs),
        "cold_s": walls[0],
        "warm_p50_s": round(statistics.median(warm), 3),
        "warm_min_s": min(warm),
        "warm_max_s": max(warm),
        "cpu_p50_s": round(statistics.median(r.cpu_s for r in runs[1:] or runs), 3),
        "peak_rss_mb": max(r.peak_rss_mb for r in runs),
        "load_max": max(max(r.load_before, r.load_after) for r in runs),
        "walls_s": walls,
        "cpus_s": [r.cpu_s for r in runs],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workspace", type=Path, help="an indexed workspace (default: the demo)")
    ap.add_argument(
        "--src",
        type=Path,
        action="append",
        help="PYTHONPATH of the child (repeat to compare trees, runs interleaved)",
    )
    ap.add_argument("--runs", type=int, default=10, help="runs per command (first is cold)")
    ap.add_argument("--as", dest="user", default="dana@acme.example")
    ap.add_argument("--group", action="append", default=None)
    ap.add_argument("--same-query", action="store_true", help="one query: the cache answers")
    ap.add_argument("--commands", default="search,status,sync", help="comma-separated")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "cli-latency.json")
    args = ap.parse_args()
    python = sys.executable
    trees = [p.resolve() for p in args.src or [ROOT / "src"]]
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # each tree's .pyc are written once
    groups = args.group or ["staff", "engineering"]
    env_of = {str(t): {"PYTHONPATH": str(t), "HF_HUB_OFFLINE": "1"} for t in trees}
    work = (
        args.workspace.resolve()
        if args.workspace
        else build_workspace(python, env_of[str(trees[0])])
    )
    salt = os.urandom(3).hex()  # queries never seen by this workspace's embedding cache
    names = args.commands.split(",")

    def argv(name: str, i: int, t: int) -> list[str]:
        """Run ``i`` of command ``name`` for tree ``t``: each tree asks its own queries (the
        embedding cache is shared by the trees: a query one asked would be a hit for all)."""
        if name != "search":
            return [python, "-m", "headwater", name]
        query = QUERIES[0] if args.same_query else f"{QUERIES[i % len(QUERIES)]} {salt}{t}-{i}"
        who = ["--as", args.user, *(a for g in groups for a in ("--group", g))]
        return [python, "-m", "headwater", "search", query, *who]

    measured: dict[tuple[str, str], list[Measured]] = {}
    for i in range(args.runs):  # interleaved: every tree sees the same machine load
        for name in names:
            for t, tree in enumerate(trees):
                run = run_measured(argv(name, i, t), cwd=work, env=env_of[str(tree)])
                measured.setdefault((str(tree), name), []).append(run)
    results: dict[str, Any] = {
        "workspace": str(work),
        "python": python,
        "same_query": args.same_query,
        "cpus": os.cpu_count(),
        "trees": {},
    }
    rows = []
    for tree in trees:
        for name in names:
            summary = summarize(measured[(str(tree), name)])
            summary["command"] = " ".join(["python", *argv(name, args.runs - 1, 0)[1:]])
            results["trees"].setdefault(str(tree), {})[name] = summary
            rows.append(
                [
                    str(tree),
                    name,
                    summary["cold_s"],
                    summary["warm_p50_s"],
                    summary["warm_min_s"],
                    summary["warm_max_s"],
                    summary["cpu_p50_s"],
                    summary["peak_rss_mb"],
                    summary["load_max"],
                ]
            )
    write_json(args.out, results)
    header = ["tree", "command", "cold s", "warm p50 s", "warm min s", "warm max s"]
    header += ["CPU p50 s", "peak RSS MB", "max load"]
    print(markdown_table(header, rows))
    print(f"results: {args.out}")


if __name__ == "__main__":
    main()
