"""``headwater rebuild``: build index generations from the manifest, verify, switch.

``headwater rebuild [INDEX ...] [--force] [--no-switch] [--json]`` builds (or resumes) a
new generation for every index whose config differs from its live generation (every
named one with ``--force``); ``headwater rebuild status|switch|rollback|cancel|retire``
manage generations. The actions are words in the first argument (an index may not be
called like one), so ``rebuild main other`` and ``rebuild switch main`` both read
naturally. Exit code 1 when a verification failed or another process cancelled the
generation meanwhile (nothing was switched).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from headwater.cli.app import app, err, open_workspace, out, print_json, run_command, usage_error
from headwater.rebuilds import orchestrate as core
from headwater.workspace import Workspace

POLL_S = 0.5
LOG_EVERY_S = 10.0


def _building(ws: Workspace) -> list[tuple[str, int, int]]:
    """(label, documents written, documents to write) of every generation in progress."""
    total = ws.manifest.index_state.active_documents()
    out = []
    for section in ws.index_sections:
        current = ws.manifest.generations.in_progress(section.name)
        if current is not None:
            out.append((current.label, ws.manifest.index_state.totals(current.key)[0], total))
    return out


@contextmanager
def _progress(ws: Workspace, quiet: bool) -> Iterator[None]:
    """A Rich bar on a terminal, a log line every LOG_EVERY_S otherwise; polls the manifest."""
    stop = threading.Event()
    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), console=err)
    tasks: dict[str, Any] = {}

    def poll() -> None:
        last_log = 0.0
        while not stop.wait(POLL_S):
            rows = _building(ws)
            if err.is_terminal:
                for label, done, total in rows:
                    if label not in tasks:
                        tasks[label] = bar.add_task(f"rebuild {label}", total=total)
                    bar.update(tasks[label], completed=done, total=total)
            elif last_log + LOG_EVERY_S <= time.monotonic():
                last_log = time.monotonic()
                for label, done, total in rows:
                    err.print(f"rebuild {label}: {done}/{total} documents")

    if quiet:
        yield
        return
    thread = threading.Thread(target=poll, daemon=True)
    if err.is_terminal:
        bar.start()
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        if err.is_terminal:
            bar.stop()


ACTIONS = ("status", "switch", "rollback", "cancel", "retire")


def _print_status(report: dict[str, Any]) -> None:
    for index in report["indexes"]:
        out.print(f"[bold]{index['name']}[/] (live: {index['live']})")
        for g in index["generations"]:
            pending = "" if g["pending"] is None else f", {g['pending']} pending"
            switched = "" if g["switched_at"] is None else f", switched {g['switched_at']}"
            out.print(
                f"  @{g['generation']} {g['state']:<9} {g['documents']}/{g['documents_total']} "
                f"documents, {g['chunks']} chunks{pending}; created {g['created_at']}{switched}"
            )
            for problem in g["problems"]:
                out.print(f"    [red]{problem}[/]")


def _summary(action: str, name: str, report: dict[str, Any], live: int | None) -> str:
    """One readable line: what the action did and which generation is live now."""
    now = f"{name}@{live} is live" if live is not None else f"{name} has no live generation"
    if action == "switch":
        if report["result"] == "switched":
            return f"switched {name} to generation {report['generation']}: {now}"
        if report["result"] == "cancelled":
            return f"{name}@{report['generation']} was cancelled meanwhile, nothing switched: {now}"
        return f"{name}@{report['generation']} failed verification, nothing switched: {now}"
    if action == "rollback":
        if report.get("result") == "stopped":
            return f"rollback of {name} stopped before the switch: {now}"
        pending = report.get("pending") or 0
        return f"rolled {name} back: {now} ({pending} documents pending)"
    if action == "cancel":
        return f"cancelled {name}@{report['cancelled']} (its storage is deleted): {now}"
    if not report["retired"]:
        return f"nothing to retire for {name}: {now}"
    return f"retired {', '.join(f'{name}@{n}' for n in report['retired'])}: {now}"


def _action(action: str, names: list[str], as_json: bool) -> int:
    with open_workspace() as ws:
        if action == "status":
            if names:
                usage_error(
                    f"`headwater rebuild status` takes no INDEX; got {' '.join(names)} "
                    "(it lists every index)"
                )
            report: dict[str, Any] = core.status(ws.runtime)
            if as_json:
                print_json(report)
            else:
                _print_status(report)
            return 0
        if len(names) != 1:
            usage_error(f"`headwater rebuild {action}` takes one INDEX; got {len(names)}")
        name = names[0]
        ws.index_section(name)  # an unknown index is named as such, for every action
        if action == "switch":
            report = core.switch(ws.runtime, name)
        elif action == "rollback":
            report = core.rollback(ws.runtime, name)
        elif action == "cancel":
            report = core.cancel(ws.runtime, name)
        else:
            report = core.retire(ws.runtime, name)
        live = ws.manifest.generations.live(name)
    if as_json:
        print_json(report)
    else:
        out.print(_summary(action, name, report, None if live is None else live.generation))
        for problem in report.get("problems", []):
            out.print(f"  [red]{problem}[/]")
    return 1 if report.get("result") in ("failed", "cancelled") else 0


@app.command("rebuild")
def rebuild(
    args: list[str] = typer.Argument(
        None,
        help="Index names (default: every index whose settings changed), or an action: "
        "status | switch INDEX | rollback INDEX | cancel INDEX | retire INDEX.",
    ),
    force: bool = typer.Option(False, "--force", help="Rebuild even when nothing changed."),
    no_switch: bool = typer.Option(
        False, "--no-switch", help="Build and verify, but leave it ready for `rebuild switch`."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print only the JSON report."),
) -> None:
    """Build new index generations from stored content (no source is read), then switch."""

    def body() -> int:
        words = list(args or [])
        if words and words[0] in ACTIONS:
            return _action(words[0], words[1:], as_json)
        with open_workspace() as ws:
            for name in words:
                ws.index_section(name)  # an unknown index fails before any work
            if not as_json:
                err.print("rebuilding from the manifest's stored content…")
            with _progress(ws, quiet=as_json and not err.is_terminal):
                report = core.rebuild(ws.runtime, words or None, force=force, switch=not no_switch)
        if as_json:
            print_json(report)
        else:
            for entry in report["indexes"]:
                line = f"{entry['index']}: {entry['result']}"
                if "generation" in entry:
                    line += f" (generation {entry['generation']})"
                out.print(line)
                for problem in entry.get("problems", []):
                    out.print(f"  [red]{problem}[/]")
        failed = any(e["result"] in ("failed", "cancelled") for e in report["indexes"])
        return 1 if failed else 0

    raise typer.Exit(run_command(body))
