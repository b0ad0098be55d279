"""The search mix in one process, without HTTP: CPU per search, or a profile, or (under
callgrind) instruction counts that a noisy VM cannot blur.

Opens a workspace ``api_load.py --keep`` left, runs ``--warmup`` searches of
``search_cpu.py``'s mix (150: every user and caller pair once, so each ACL expression's
share is known as in a long-running server), then ``--searches`` more, and prints the
process CPU per search; ``--profile`` prints cProfile's top functions instead.
``--memory-mb`` sets the index's ``search_memory_mb`` (0: every search in SQL), and
``--writes-per-s`` runs a second process that rewrites one document of the index that often
meanwhile (each write is a new index state: what the in-memory keyword scoring costs when
the index changes under it). Instructions per search: run it under callgrind with
``--searches 0`` and ``60`` and divide the difference by 60:

    valgrind --tool=callgrind --callgrind-out-file=/dev/null \\
        .venv/bin/python bench/search_mix.py "$WORKSPACE" --searches 60
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import os
import pstats
import subprocess
import sys
import time
from collections.abc import Iterator
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
    parser.add_argument("--memory-mb", type=int, help="the index's search_memory_mb")
    parser.add_argument("--writes-per-s", type=float, default=0.0, help="another process's")
    args = parser.parse_args()
    for role in ("admin", "ingest", "search", "backend"):
        os.environ.setdefault(f"HW_{role.upper()}_KEY", KEYS[role])
    config = args.workspace / "headwater.toml"
    if args.memory_mb is not None:
        config = args.workspace / "headwater-search-mix.toml"
        config.write_text(
            (args.workspace / "headwater.toml").read_text()
            + f'\n[[index]]\nname = "main"\ntype = "sqlite"\nsearch_memory_mb = {args.memory_mb}\n'
        )
    workspace = Workspace.open(config)
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
    with writer(args.workspace, args.writes_per_s):
        start = time.process_time()
        run(measured)
        spent = time.process_time() - start
    print(
        f"{args.searches} searches: {spent / max(args.searches, 1) * 1000:.2f} ms of CPU a search"
    )
    return 0


@contextlib.contextmanager
def writer(workspace: Path, rate: float) -> Iterator[None]:
    """Another process rewriting one document of the index ``rate`` times a second."""
    if rate <= 0:
        yield
        return
    script = Path(__file__).resolve().parent / "search_mix_writer.py"
    process = subprocess.Popen(
        [sys.executable, str(script), str(workspace / ".headwater"), str(rate)],
        stdin=subprocess.PIPE,
    )
    try:
        yield
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=30)


if __name__ == "__main__":
    raise SystemExit(main())
