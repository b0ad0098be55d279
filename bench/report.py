"""Side-by-side Markdown tables from the JSON results in ``bench/out/``.

The idea: ``docs/performance.md`` quotes only figures from runs actually made, so the
table is printed from the result files, not typed by hand. Each result file is one run of
``bench/run.py`` (Headwater) or ``bench/peers/langchain_run.py`` (LangChain); a figure
that a run did not produce prints as a dash.

    .venv/bin/python bench/report.py bench/out/headwater-corpus-2k-local.json \\
        bench/out/langchain-corpus-2k-real.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from measure import markdown_table


def _embedded(tool: str, phase: dict[str, Any]) -> int | None:
    if tool == "langchain":
        return phase.get("texts_embedded")
    index = phase.get("index_report") or {}
    chunks = index.get("chunks") if isinstance(index, dict) else None
    if isinstance(chunks, dict) and "embedded" in chunks:
        return int(chunks["embedded"])
    return phase.get("chunks_embedded_from_cache_rows")


def _deleted(tool: str, phase: dict[str, Any]) -> str | None:
    if tool == "langchain":
        return f"{phase['result']['num_deleted']} chunks"
    deleted = phase.get("counts", {}).get("deleted")
    return None if deleted is None else f"{deleted} docs"


def rows_for(report: dict[str, Any]) -> list[list[object]]:
    tool = report["tool"]
    p = report["phases"]
    model = p.get("model", {}).get("chunks_per_s")
    docs = report["corpus"].get("docs")
    label = f"{tool} ({docs:,} docs, {report['embedder']})"
    rows: list[list[object]] = []
    if model:
        rows.append([label, "model alone", None, None, None, model, 1.0, None, None, None, None])
    expected = p.get("expected", {}).get("chunks_whose_text_changed")
    for name in ("initial", "noop", "after_mutate", "noop_after_mutate"):
        ph = p.get(name)
        if not ph:
            continue
        embedded = _embedded(tool, ph)
        files = ph.get("files_opened")
        seen = ph.get("counts", {}).get("seen") if tool == "headwater" else files
        cps = embedded / ph["wall_s"] if embedded else None
        ratio = cps / model if (cps and model and name == "initial") else None
        note = f"{embedded} (changed: {expected})" if name == "after_mutate" else embedded
        rows.append(
            [
                label,
                name,
                ph["wall_s"],
                ph.get("cpu_s"),
                (seen / ph["wall_s"]) if seen else None,
                cps,
                ratio,
                note,
                _deleted(tool, ph) if name == "after_mutate" else None,
                files,
                ph["peak_rss_mb"],
            ]
        )
    return rows


HEADER = [
    "run",
    "phase",
    "process s",
    "CPU s",
    "docs/s",
    "chunks/s",
    "÷ model",
    "chunks embedded",
    "deletes applied",
    "files opened",
    "peak RSS MB",
]


def search_rows(report: dict[str, Any]) -> list[list[object]]:
    results = report.get("results") or report.get("phases", {}).get("search", {}).get("results")
    return [
        [r["caller"], r["mode"], r["p50_ms"], r["p95_ms"], r["mean_hits"]] for r in results or []
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="+", type=Path)
    args = parser.parse_args()
    rows: list[list[object]] = []
    for path in args.results:
        report = json.loads(path.read_text())
        if "phases" in report:
            rows.extend(rows_for(report))
    if rows:
        print(markdown_table(HEADER, rows))
    for path in args.results:
        report = json.loads(path.read_text())
        found = search_rows(report)
        if found:
            print(f"\nsearch latency, {path.name}:\n")
            print(markdown_table(["caller", "mode", "p50 ms", "p95 ms", "mean hits"], found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
