"""Maintenance commands: prune, reconcile, source remove and housekeeping."""

from __future__ import annotations

from typing import Any

import typer

from headwater.cli import exits
from headwater.cli.common import (
    app,
    err,
    open_workspace,
    out,
    print_json,
    run_command,
    safe,
    usage_error,
)
from headwater.cli.progress import reporter


@app.command()
def prune(
    sources: list[str] = typer.Argument(None, help="Source ids (default: all)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Report what would be deleted."),
    force: bool = typer.Option(False, "--force", help="Allow deleting past the safety fraction."),
    as_json: bool = typer.Option(False, "--json", help="Print only the JSON report."),
) -> None:
    """Delete documents their source no longer has, from a complete enumeration."""

    def body() -> int:
        with open_workspace() as ws, reporter(err, as_json=as_json) as bars:
            ws.index_progress, ws.count_progress = bars.index, bars.count
            with bars.phase("prune (enumerating sources)"):
                reports = [
                    r.as_dict() for r in ws.prune(sources or None, dry_run=dry_run, force=force)
                ]
        if as_json:
            print_json({"prunes": reports})
            return exits.for_prunes(reports)
        for r in reports:
            out.print(
                f"{safe(r['source'])}: {r['status']} — {r['candidates']} of {r['active']} documents "
                f"missing from the source, {r['deleted']} deleted"
            )
        return exits.for_prunes(reports)

    raise typer.Exit(run_command(body))


source_app = typer.Typer(
    help="Manage sources: remove one from the manifest, pause or resume its schedule.",
    no_args_is_help=True,
)
app.add_typer(source_app, name="source")


@source_app.command("remove")
def source_remove(
    source_id: str = typer.Argument(..., help="The source id (configured or not)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Report what would be removed."),
    as_json: bool = typer.Option(False, "--json", help="Print only the JSON report."),
) -> None:
    """Delete a source's documents from the manifest and every index; forget its runs."""

    def body() -> int:
        with open_workspace() as ws:
            report = ws.remove_source(source_id, dry_run=dry_run)
        unverified = report.unverified_deletes
        if as_json:
            print_json(report.as_dict())
        elif dry_run:
            out.print(
                f"{safe(source_id)}: would delete {report.documents} documents and forget "
                f"{report.runs} runs, {report.checkpoints} checkpoints, "
                f"{report.failures} failure records"
            )
        else:
            out.print(
                f"{safe(source_id)}: {report.tombstoned} documents deleted, "
                f"{report.deleted_from_indexes} removed from the indexes; runs and "
                "checkpoints forgotten"
                + (
                    f"; {unverified} deletes not yet verified: run `headwater index`"
                    if unverified
                    else ""
                )
            )
        return 1 if unverified else 0

    raise typer.Exit(run_command(body))


@app.command()
def reconcile(
    sink: str = typer.Option(None, "--sink", help="Only this index."),
    repair: bool = typer.Option(False, "--repair", help="Re-apply exactly what differs."),
    generation: int = typer.Option(
        None, "--generation", min=1, help="This generation (default: the live one)."
    ),
    adopt: bool = typer.Option(
        False,
        "--adopt",
        help="Give an index bound to another manifest to this one, keeping what it holds; "
        "then repair what differs and index what is pending (implies --repair).",
    ),
    reset: bool = typer.Option(
        False,
        "--reset",
        help="Give an index bound to another manifest to this one, emptied; then index "
        "everything from the stored content (no source is read).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print only the JSON report."),
) -> None:
    """Compare the manifest with each index; with --repair, fix the drift."""

    def body() -> int:
        if adopt and reset:
            usage_error("--adopt keeps what the index holds, --reset empties it: give one")
        if (adopt or reset) and generation is not None:
            usage_error("--adopt and --reset take over the generations that receive writes; "
                        "drop --generation")  # fmt: skip
        taken: list[str] | None = None
        with (
            open_workspace() as ws,
            reporter(err, as_json=as_json) as bars,
            bars.phase("reconcile"),
        ):
            ws.count_progress, ws.index_progress = bars.count, bars.index
            if adopt or reset:
                taken = ws.take_over_indexes(sink, empty=reset)
            report = ws.reconcile(
                sink, repair=repair or taken is not None, generation=generation
            ).as_dict()
            if taken is not None:
                report["taken_over"] = taken
                report["index"] = ws.index().as_dict()
        if as_json:
            print_json(report)
            return exits.for_reconcile(report, repair=repair or taken is not None)
        _print_reconcile(report, taken, adopted=adopt)
        return exits.for_reconcile(report, repair=repair or taken is not None)

    raise typer.Exit(run_command(body))


def _print_reconcile(report: dict[str, Any], taken: list[str] | None, *, adopted: bool) -> None:
    """Print the indexes taken over (``taken``: None when none was asked) and each index's
    drift, one line per index."""
    if taken is not None:
        how = "adopted" if adopted else "emptied and re-indexed"
        out.print(f"{how}: {', '.join(taken)}" if taken else "no index belonged to "
                  "another manifest; nothing taken over")  # fmt: skip
    for name, d in report["sinks"].items():
        state = "in sync" if d["in_sync"] else "DRIFT"
        out.print(
            f"{name}: {state}; checked {d['checked']}, missing {d['missing']}, "
            f"revision mismatch {d['revision_mismatch']}, chunk mismatch {d['chunk_mismatch']}, "
            f"unconfirmed {d['unconfirmed']}, orphans {d['orphans']}, "
            f"repaired {d['repaired']}"
        )


@app.command()
def housekeeping(
    as_json: bool = typer.Option(False, "--json", help="Print only the JSON report."),
) -> None:
    """Purge old tombstones and run history, and delete unreferenced stored content."""
    from headwater.scheduler.housekeeping import housekeep

    def body() -> int:
        with open_workspace() as ws:
            report = housekeep(ws.runtime)
        if as_json:
            print_json(report.as_dict())
        else:
            out.print(f"housekeeping: {safe(report.summary())}")
        return 0

    raise typer.Exit(run_command(body))
