"""How the everyday commands print their reports for a person (``--json`` aside).

The sync table with its errors, notes and blocked prunes; one line per source of a
permission sync; ``status``'s table and lines, with the scheduler's view of a source in a
word or two; the failure summary by cause with its fix (``failures --summary``).
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


def hint_state(hints: dict[str, Any] | None) -> str:
    """The status table's "last hint" cell: when the last hint came and the last lag."""
    if not hints or not hints["last_hint_at"]:
        return ""
    lag = hints["last_lag_s"]
    return (
        f"{hints['last_hint_at'][:19]} (lag {lag:.1f}s)"
        if lag is not None
        else hints["last_hint_at"][:19]
    )


def print_status(report: dict[str, Any]) -> None:
    """``status`` for a person: the sources' table, then a line per throttled, syncing or
    unsubscribed source, the indexes' pending work and the DLQ."""
    table = Table(box=None)
    columns = ("source", "type", "documents", "deleted", "failures", "last run", "at")
    for column in (*columns, "schedule", "last hint"):
        table.add_column(column)
    for s in report["sources"]:
        last = s["last_run"]
        table.add_row(
            safe(s["id"]) + ("" if s.get("configured", True) else " (not configured)"),
            s["type"],
            str(s["documents"]),
            str(s["deleted"]),
            str(s["failures_open"]),
            last["status"] if last else "never",
            (last["window"]["end"] or "") if last else "",
            schedule_state(s),
            hint_state(s.get("hints")),
        )
    out.print(table)
    for s in report["sources"]:
        if s.get("throttled_until"):
            out.print(
                f"source {safe(s['id'])} throttled until {s['throttled_until']} "
                "(the vendor answered 429; its credential waits, see docs/operations.md)"
            )
    for s in report["sources"]:
        last = s["last_run"]
        if last and last["status"] == "running" and last.get("expected") is not None:
            eta = "ETA -" if last["eta_s"] is None else f"ETA {last['eta_s']:.0f} s"
            out.print(
                f"source {safe(s['id'])} syncing: {last['counts']['seen']} of "
                f"{last['expected']} expected items seen, {eta}"
            )
        for sub in s.get("subscriptions", []):
            if sub["last_error"]:
                out.print(
                    f"source {safe(s['id'])} subscription {safe(sub['scope'] or '(all)')}: "
                    f"{sub['failures']} failed renewal(s), retrying at {sub['retry_at']}: "
                    f"{safe(sub['last_error'])}",
                    markup=False,
                )
    for name, info in report["indexes"].items():
        out.print(f"index {name} ({info['type']}): {info['pending']} pending")
    dlq = report["dlq"]
    out.print(
        f"pipeline {report['pipeline_version']}; DLQ {dlq['depth']}"
        + (f" (oldest {dlq['oldest_age_s']:.0f}s)" if dlq["oldest_age_s"] is not None else "")
        + f", failed deletes {dlq['failed_deletes']}"
    )
