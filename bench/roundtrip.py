"""The per-connector round trip (``tests/roundtrip``) at N items, one case per process.

The idea: the CI round trip (500 items) is also the 10,000-item benchmark of issue 29
goal 3; only ``HEADWATER_ROUNDTRIP_ITEMS`` changes. Each chosen case runs as its own
``python -m pytest -q -n 0 -p no:cacheprovider <module> -k <case>`` child through
``measure.run_measured``, so its wall time, CPU time (user + sys) and peak RSS
(``ru_maxrss`` from ``os.wait4``) are that one test process's: load, first sync, the
5 % delete / edit / ACL step, re-sync and the exact-count asserts. Linux adds in the
children it waits for (the git CLI; WsgiDAV, Azurite, fake-gcs-server and Dovecot, which
fixtures start): their CPU is summed and the peak RSS is the largest single process's.
In-process fakes (moto, the SaaS fakes, the HTTP server) are in the test process's own
figures; PostgreSQL and MariaDB, running outside, are not counted.
A case passes when pytest passes (every count exact) and is flagged when its peak RSS
is over its memory budget (``BUDGET_MB``). A Markdown table goes to stdout, the JSON to
``bench/out/roundtrip-<N>.json``.

    nice -n 10 python bench/roundtrip.py --items 10000 filesystem push postgresql
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from measure import markdown_table, run_measured, write_json

ROOT = Path(__file__).resolve().parents[1]
MODULES = {
    "test_roundtrip_local.py": (
        "filesystem postgresql mariadb s3 git web webdav push gdrive confluence"
    ),
    "test_roundtrip_saas.py": "jira dropbox azure_blob sharepoint gcs",
    "test_roundtrip_vendors.py": "github gitlab notion zendesk servicenow rss",
    "test_roundtrip_messages.py": "slack teams box gmail imap",
}
CASES = {case: module for module, names in MODULES.items() for case in names.split()}
# The memory budget: peak RSS of the test process at 10,000 items, per case. Chosen from
# the 500-item run (docs/performance.md, "10,000 items"): the process holds
# ~150 MB of imports and the workspace before any item; what grows with N is the fake's
# or server's in-process copy of the items and the sync's batches. 400 MB everywhere
# leaves room for linear growth of the larger in-process fakes; moto keeps every object
# (with its metadata and versions) in this process, so s3 gets 600 MB.
DEFAULT_BUDGET_MB = 400.0
BUDGET_MB: dict[str, float] = {"s3": 600.0}


def budget_mb(case: str) -> float:
    return BUDGET_MB.get(case, DEFAULT_BUDGET_MB)


def run_case(case: str, items: int, timeout_s: float | None) -> dict[str, Any]:
    """One case in its own pytest process at ``items`` items, measured."""
    module = f"tests/roundtrip/{CASES[case]}"
    command = [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider"]
    # -k matches substrings: "web" would also pick "webdav" in the same module.
    others = [c for c, m in CASES.items() if m == CASES[case] and c != case and case in c]
    command += [module, "-k", " and ".join([case, *(f"not {c}" for c in others)])]
    if timeout_s:
        command = ["timeout", str(int(timeout_s)), *command]
    env = {"HEADWATER_ROUNDTRIP_ITEMS": str(items), "PYTHONPATH": str(ROOT / "src")}
    m = run_measured(command, cwd=ROOT, env=env, check=False)
    tail = (m.stdout.strip().splitlines() or [""])[-1]
    passed = m.returncode == 0 and " passed" in tail and "failed" not in tail
    budget = budget_mb(case)
    return {
        "case": case,
        "items": items,
        "passed": passed,
        "returncode": m.returncode,
        "timed_out": m.returncode == 124,
        "wall_s": m.wall_s,
        "cpu_s": m.cpu_s,
        "peak_rss_mb": m.peak_rss_mb,
        "budget_mb": budget,
        "over_budget": m.peak_rss_mb > budget,
        "load_before": m.load_before,
        "load_after": m.load_after,
        "summary": tail,
        "output_tail": "\n".join(m.stdout.strip().splitlines()[-40:]) if not passed else "",
    }


def table(results: list[dict[str, Any]]) -> str:
    rows = [
        (
            r["case"],
            r["items"],
            "exact" if r["passed"] else ("timeout" if r["timed_out"] else "FAILED"),
            r["wall_s"],
            r["cpu_s"],
            r["peak_rss_mb"],
            r["budget_mb"],
            "OVER" if r["over_budget"] else "ok",
            f"{r['load_before']:.1f} → {r['load_after']:.1f}",
        )
        for r in results
    ]
    header = ["case", "items", "counts", "wall s", "CPU s", "peak RSS MB", "budget MB"]
    return markdown_table([*header, "memory", "load 1 min"], rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="*", help=f"default: all ({', '.join(CASES)})")
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--timeout", type=float, default=0, help="seconds per case (0: none)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    cases = args.cases or list(CASES)
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        parser.error(f"unknown cases: {unknown}")
    out = args.out or ROOT / "bench" / "out" / f"roundtrip-{args.items}.json"
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    results: list[dict[str, Any]] = []
    for case in cases:
        results.append(run_case(case, args.items, args.timeout or None))
        r = results[-1]
        print(
            f"{case}: {'exact' if r['passed'] else 'FAILED'} {r['wall_s']:.1f} s wall, "
            f"{r['cpu_s']:.1f} s CPU, {r['peak_rss_mb']:.0f} MB, load {r['load_after']:.1f}",
            file=sys.stderr,
            flush=True,
        )
        report = {"items": args.items, "started": started, "nice": os.nice(0)}
        write_json(out, {**report, "results": results})
    print(table(results))
    failed = [r["case"] for r in results if not r["passed"] or r["over_budget"]]
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
