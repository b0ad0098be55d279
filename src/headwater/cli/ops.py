"""Maintenance commands: prune and reconcile."""

from __future__ import annotations

import typer

from headwater.cli.app import app, open_workspace, out, print_json, run_command
from headwater.indexer.reconcile import reconcile as run_reconcile


@app.command()
def prune(
    sources: list[str] = typer.Argument(None, help="Source ids (default: all)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Report what would be deleted."),
    force: bool = typer.Option(False, "--force", help="Allow deleting past the safety fraction."),
    as_json: bool = typer.Option(False, "--json", help="Print only the JSON report."),
) -> None:
    """Delete documents their source no longer has, from a complete enumeration."""

    def body() -> None:
        with open_workspace() as ws:
            reports = ws.prune(sources or None, dry_run=dry_run, force=force)
        if as_json:
            print_json({"prunes": reports})
            return
        for r in reports:
            out.print(
                f"{r['source']}: {r['status']} — {r['candidates']} of {r['active']} documents "
                f"missing from the source, {r['deleted']} deleted"
            )

    run_command(body)


@app.command()
def reconcile(
    sink: str = typer.Option(None, "--sink", help="Only this index."),
    repair: bool = typer.Option(False, "--repair", help="Re-apply exactly what differs."),
    generation: int = typer.Option(
        None, "--generation", min=1, help="This generation (default: the live one)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print only the JSON report."),
) -> None:
    """Compare the manifest with each index; with --repair, fix the drift."""

    def body() -> None:
        with open_workspace() as ws:
            report = run_reconcile(ws, sink_name=sink, repair=repair, generation=generation)
        if as_json:
            print_json(report)
            return
        for name, d in report["sinks"].items():
            state = "in sync" if d["in_sync"] else "DRIFT"
            out.print(
                f"{name}: {state}; checked {d['checked']}, missing {d['missing']}, "
                f"revision mismatch {d['revision_mismatch']}, chunk mismatch {d['chunk_mismatch']}, "
                f"unconfirmed {d['unconfirmed']}, orphans {d['orphans']}, "
                f"repaired {d['repaired']}"
            )

    run_command(body)
