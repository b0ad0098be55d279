"""The search mix in one process, without HTTP: CPU per search, or a profile, or (under
callgrind) instruction counts that a noisy VM cannot blur.

Opens a workspace ``api_load.py --keep`` left, runs ``--warmup`` searches of
``search_cpu.py``'s mix (150: every user and caller pair once, so each ACL expression's
share is known as in a long-running server), then ``--searches`` more, and prints the
process CPU per search; ``--profile`` prints cProfile's top functions instead.
Instructions per search: run it under callgrind with ``--searches 0`` and ``60`` and
divide the difference by 60:

    valgrind --tool=callgrind --callgrind-out-file=/dev/null \\
        .venv/bin/python bench/search_mix.py "$WORKSPACE" --searches 60
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "api"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from api_support import KEYS
from search_cpu import queries

from headwater.workspace import Workspace


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workspace", type=Path, help="a workspace bench/api_load.py kept")
    parser.add_argument("--searches", type=int, default=90)
    parser.add_argument("--warmup", type=int, default=150)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--profile", action="store_true", help="print cProfile's top 40")
    args = parser.parse_args()
    for role in ("admin", "ingest", "search", "backend"):
        os.environ.setdefault(f"HW_{role.upper()}_KEY", KEYS[role])
    workspace = Workspace.open(args.workspace)
    bodies = queries(args.warmup + args.searches, args.seed)

    def run(part: list[dict[str, object]]) -> None:
        for body in part:
            groups = [str(g) for g in body["groups"]]  # type: ignore[attr-defined]
            workspace.search(str(body["query"]), user=str(body["user"]), groups=groups)

    run(bodies[: args.warmup])
    measured = bodies[args.warmup :]
    if args.profile:
        profile = cProfile.Profile()
        profile.runcall(run, measured)
        pstats.Stats(profile).sort_stats("cumulative").print_stats(40)
        return 0
    start = time.process_time()
    run(measured)
    spent = time.process_time() - start
    print(
        f"{args.searches} searches: {spent / max(args.searches, 1) * 1000:.2f} ms of CPU a search"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
