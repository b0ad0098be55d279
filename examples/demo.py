"""The Headwater demo: sync a small company corpus, search as two users, edit, re-sync.

It copies ``examples/acme`` to ``.demo-workspace/`` (so the repository stays untouched),
then drives the real ``headwater`` CLI, printing each command before its output:

1. ``headwater sync`` — every document is new; chunks are embedded by the bundled model.
2. The same query as an engineer and as someone with only public access: different results.
3. One paragraph of one file is edited; ``headwater sync --json`` shows exactly one
   changed document, and the index line shows how few chunks were re-embedded.
4. ``headwater status``.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "examples" / "acme"
WORK = ROOT / ".demo-workspace"
HEADWATER = [sys.executable, "-m", "headwater.cli"]


def shown(args: tuple[str, ...]) -> str:
    """The command line as printed: quoted as a shell reads it, so it can be pasted."""
    return f"$ {shlex.join(['headwater', *args])}"


def headwater(*args: str, capture: bool = False) -> str:
    print(f"\n{shown(args)}", flush=True)
    result = subprocess.run(
        [*HEADWATER, *args], cwd=WORK, text=True, capture_output=capture, check=False
    )
    if result.returncode not in (0,):
        if capture:
            sys.stderr.write(result.stderr)
        raise SystemExit(f"headwater {args[0]} exited {result.returncode}")
    return result.stdout if capture else ""


def show_results(raw: str) -> None:
    results = json.loads(raw)["results"]
    if not results:
        print("  (no results visible to this user)")
    for n, hit in enumerate(results, 1):
        print(f"  {n}. {hit['title']}  [{hit['source']}]  score={hit['score']:.4f}")


def main() -> None:
    if WORK.exists():
        shutil.rmtree(WORK)
    shutil.copytree(SOURCE, WORK, ignore=shutil.ignore_patterns(".headwater"))

    print("== 1. first sync: every document is new")
    headwater("sync")

    query = "what happens when a robot fails to dock"
    print(f"\n== 2. the same query as two users: {query!r}")
    print("\nas dana@acme.example (groups: staff, engineering):")
    show_results(
        headwater(
            "search",
            query,
            "--as",
            "dana@acme.example",
            "--group",
            "staff",
            "--group",
            "engineering",
            "--k",
            "5",
            "--json",
            capture=True,
        )
    )
    print("\nas visitor@example.com (no groups: public documents only):")
    show_results(
        headwater(
            "search", query, "--as", "visitor@example.com", "--k", "5", "--json", capture=True
        )
    )

    print("\n== 3. edit one paragraph of one file, then re-sync")
    target = WORK / "docs" / "staff" / "expense-policy.md"
    text = target.read_text(encoding="utf-8")
    paragraphs = text.split("\n\n")
    index = next(i for i, p in enumerate(paragraphs) if i > 0 and not p.startswith("#"))
    paragraphs[index] = paragraphs[index] + " (Updated: receipts are now due within 14 days.)"
    target.write_text("\n\n".join(paragraphs), encoding="utf-8")
    print(f"edited one paragraph of {target.relative_to(WORK)}")
    headwater("sync")
    from headwater import Workspace

    with Workspace.open(WORK) as ws:
        doc = ws.document(source="staff", object_id="expense-policy.md")
        runs = ws.last_runs()
        changed = sum(r.counts.changed for r in runs.values() if r is not None)
        print(
            f"\nexactly {changed} document changed; expense-policy.md is now at revision "
            f"{doc['revision']} with {doc['indexes']['main']['chunks']} chunks in the index "
            "(the 'indexed:' line above shows how many chunks were re-embedded)"
        )
    print("\n== 4. status")
    headwater("status")


if __name__ == "__main__":
    main()
