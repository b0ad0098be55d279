"""The instructions a no-op re-sync executes per file, counted rather than timed.

The idea: on a shared or throttled machine a no-op's CPU time wanders by ±10 % from one
run to the next, more than most single changes save; the instructions it executes do
not. ``valgrind --tool=callgrind`` counts them for a process that opens a prepared
workspace and runs ``Workspace.sync(index=False)`` in a loop; the count of a process doing
``--runs`` no-ops minus that of one doing a single no-op is what ``--runs - 1`` no-ops
cost, imports and start cancelled out. ``PYTHONHASHSEED=0`` keeps dict and set layouts
the same from run to run. Callgrind runs some 50 times slower than the CPU: a workspace
of 10,000 files (``bench/noop.py --files 10000``) takes about two minutes.

    PYTHONPATH=src .venv/bin/python bench/noop_instructions.py bench/out/noop-ws-10000-sqlite
    PYTHONPATH=/path/to/other/src .venv/bin/python bench/noop_instructions.py WS  # before

The code measured is the ``headwater`` that ``PYTHONPATH`` names; valgrind must be
installed (Debian's ``valgrind``).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

ONE_PROCESS = """
import sys
from headwater.workspace import Workspace
with Workspace.open("headwater.toml") as ws:
    for _ in range(int(sys.argv[1])):
        report = ws.sync(index=False)
        assert report.runs and not report.skipped, "no run: is another process syncing it?"
        assert all(r.counts.new + r.counts.changed == 0 for r in report.runs), "not a no-op"
"""


def instructions(workspace: Path, runs: int) -> int:
    """The instructions callgrind counts for one process running ``runs`` no-ops."""
    env = {**os.environ, "PYTHONHASHSEED": "0", "HF_HUB_OFFLINE": "1"}
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
    command += [sys.executable, "-c", ONE_PROCESS, str(runs)]
    done = subprocess.run(
        command, env=env, cwd=workspace, capture_output=True, text=True, check=False
    )
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise RuntimeError(f"valgrind exited {done.returncode}:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workspace", type=Path, help="a prepared no-op bench's workspace")
    parser.add_argument("--runs", type=int, default=3, help="no-ops in the longer process")
    args = parser.parse_args()
    # bench/noop.py's and bench/noop_sources.py's workspaces name their size
    named = re.search(r"noop-(?:sql-|s3-)?ws-(\d+)-", args.workspace.resolve().name)
    files = int(named.group(1)) if named else 0
    one, many = instructions(args.workspace, 1), instructions(args.workspace, args.runs)
    each = (many - one) // (args.runs - 1)
    per_file = f", {each // files:,} per file" if files else ""
    print(
        f"{each:,} instructions per no-op{per_file} ({one:,} for 1 run, {many:,} for {args.runs})"
    )


if __name__ == "__main__":
    main()
