"""Check the demo's hand-written queries against a synced Acme workspace.

The idea: the demo corpus is only useful if its queries find the right document and its
access rules hold, so every query in ``queries.json`` is run through the Python API as a
caller in the given groups: the expected document must rank first, and for each group set
in ``hidden_from`` it must not appear at all. Run ``headwater sync`` in this directory
first, then:

    HF_HUB_OFFLINE=1 ../../.venv/bin/python check_queries.py [--mode hybrid]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from headwater import Workspace

HERE = Path(__file__).resolve().parent


def relative(locator: str) -> str:
    """A result's locator as a path under docs/ (locators are absolute file paths)."""
    path = Path(locator)
    try:
        return path.resolve().relative_to(HERE / "docs").as_posix()
    except ValueError:
        return locator


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", default="hybrid", choices=["hybrid", "vector", "keyword"])
    parser.add_argument("--config", type=Path, default=HERE / "headwater.toml")
    args = parser.parse_args()
    queries = json.loads((HERE / "queries.json").read_text())["queries"]
    failures = 0
    with Workspace.open(args.config) as ws:
        for q in queries:
            hits = ws.search(q["query"], user="demo@acme.example", groups=q["groups"], k=5,
                             mode=args.mode)  # fmt: skip
            top = relative(hits[0]["locator"]) if hits else None
            ok = top == q["expect"]
            leaks = []
            for groups in q["hidden_from"]:
                other = ws.search(q["query"], user="other@acme.example", groups=groups, k=20,
                                  mode=args.mode)  # fmt: skip
                if any(relative(h["locator"]) == q["expect"] for h in other):
                    leaks.append(groups)
            failures += (not ok) + len(leaks)
            mark = "ok " if ok and not leaks else "BAD"
            print(f"{mark} {q['query']!r} -> {top}" + (f"  LEAKED to {leaks}" if leaks else ""))
    print(
        f"{len(queries) - failures} of {len(queries)} queries passed" if failures else "all passed"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
