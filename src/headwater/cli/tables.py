"""How the everyday commands print their reports for a person (``--json`` aside).

The sync table with its errors, notes and blocked prunes; one line per source of a
permission sync; the scheduler's view of a source in a word or two (``status``); the
failure summary by cause with its fix (``failures --summary``).
"""

from __future__ import annotations

from typing import Any

from rich.table import Table

from headwater.cli.common import err, open_workspace, out, print_json, safe
from headwater.cli.lines import indexed_line
from headwater.indexer.report import IndexReport


def print_sync(result: Any) -> None:
    """The sync report for a person: the runs' table, their errors and notes, the indexing."""
    table = Table(title="sync", box=None)
    for column in (
        "source",
        "status",
        "seen",
        "new",
        "changed",
        "unchanged",
        "deleted",
        "failed",
        "stale",
        "s",
    ):
        table.add_column(column)
    for run in result.runs:
        c = run.counts
        table.add_row(
            run.source,
            run.status,
            *(
                str(v)
                for v in (c.seen, c.new, c.changed, c.unchanged, c.deleted, c.failed, c.stale)
            ),
            f"{run.duration_s:.1f}",
        )
    for skipped in result.skipped:
        table.add_row(skipped.source, "skipped (busy)", *("-" * 8))
    out.print(table)
    for run in result.runs:
        if run.error:
            err.print(f"[red]{run.source}:[/] {safe(run.error)}")
        if run.note:
            err.print(f"[yellow]{run.source}: note:[/] {safe(run.note)}")
        if run.prune_blocked:
            b = run.prune_blocked
            err.print(
                f"[yellow]{run.source}: prune blocked[/]: {b['candidates']} of {b['active']} documents "
                f"would be deleted (> {b['max_fraction']:.0%}); check the source, then "
                "`headwater sync --force` to allow it once."
            )
    idx = result.index
    if idx.replaced or idx.deleted or idx.acl_updates or idx.failed:
        out.print(indexed_line(idx), markup=False)
    print_left_to_rebuild(idx)
    out.print(f"took {result.duration_s:.1f} s (indexing {idx.duration_s:.1f} s)")


def print_left_to_rebuild(idx: IndexReport) -> None:
    """One line per building generation a sync left to its rebuild, with its backlog."""
    for left in idx.left_to_rebuild or ():
        out.print(
            f"left {left.pending} documents to the building generation "
            f"{left.index}@{left.generation} of {left.index} (`headwater rebuild status`; "
            f"`headwater rebuild {left.index}` or `headwater run` indexes them)",
            markup=False,
        )


def sync_permissions(ws: Any, sources: list[str] | None, as_json: bool, index: bool) -> int:
    """``sync --permissions``: one line per source; 1 when any source failed, else 0."""
    result = ws.sync_permissions(sources, index=index)
    if as_json:
        print_json(result.as_dict())
    for report in result.sources:
        if not as_json:
            groups = report.groups
            out.print(
                f"{safe(report.source)}: {report.status}, {report.checked} checked, "
                f"{report.changed} ACLs changed, {report.unknown} unknown"
                + (f", {groups.groups} groups / {groups.memberships} members" if groups else "")
            )
        if report.error:
            err.print(f"[red]{safe(report.source)}:[/] {safe(report.error)}")
    if not as_json:
        print_left_to_rebuild(result.index)
    return 1 if result.failed else 0


def schedule_state(source: dict[str, Any]) -> str:
    """The scheduler's view of one source in a word or two (``status --json`` has it all)."""
    if source.get("paused"):
        return "paused"
    if source.get("lease"):
        return f"running ({safe(source['lease']['owner'])})"
    if source.get("backoff_until"):
        return f"backoff until {source['backoff_until']}"
    return ""


def failures_summary(source: str | None, as_json: bool) -> None:
    """``failures --summary``: one block per cause, with examples and the fix."""
    with open_workspace() as ws:
        if source is not None:
            ws.require_known_source(source)
        report = ws.failure_summary(source)
    if as_json:
        print_json(report.as_dict())
        return
    if not report.groups:
        out.print("no open failures")
        return
    out.print(f"{report.total} open failures in {len(report.groups)} groups", markup=False)
    for cause in report.groups:
        g = cause.group
        dead = f" ({g.dead} dead)" if g.dead else ""
        lines = [
            f"{g.key.source_id}  {g.key.stage}  {g.key.label()}: {g.count}{dead}",
            f"    e.g. {', '.join(g.examples)}",
            f"    fix: {cause.fix.line}",
            f"         in {cause.fix.where}: {cause.fix.detail}",
        ]
        for line in lines:
            out.print(safe(line, markup=False), markup=False)
