"""``headwater run`` (the scheduler), ``headwater runs`` (run history) and
``headwater source pause|resume``.

``run`` is the long-running scheduler of ``headwater.scheduler.daemon``; with ``--once``
it runs every due source once, drains the indexer and exits with 0 (done), 1 (a run
failed), 3 (done, but a prune was blocked by the safety fraction: a person must look) or
130 (Ctrl-C). ``runs`` reads the run history the sync runner and the scheduler write.
"""

from __future__ import annotations

import logging
from typing import Any

import typer
from rich.table import Table

from headwater.cli.common import (
    app,
    err,
    open_workspace,
    out,
    print_json,
    run_command,
    state,
    usage_error,
)
from headwater.cli.lines import print_fields
from headwater.cli.ops import source_app  # one `source` group: remove, pause, resume
from headwater.cli.progress import log_reporter
from headwater.errors import NotFoundError
from headwater.manifest.runs import lease_owner
from headwater.scheduler.daemon import Scheduler
from headwater.workspace import Workspace

RUN_STATUSES = ("running", "succeeded", "completed_with_errors", "failed", "cancelled")


@app.command("run")
def run(
    sources: list[str] = typer.Argument(None, help="Only these source ids (default: all)."),
    once: bool = typer.Option(False, "--once", help="Run every due source once, drain, exit."),
    max_concurrent: int = typer.Option(
        None, "--max-concurrent", min=1, help="Runs at once (default: [scheduler] max_concurrent)."
    ),
) -> None:
    """Keep every source fresh: sync each every refresh_every, prune every prune_every."""

    def body() -> int:
        if state.verbose == 0:
            logging.getLogger("headwater.scheduler").setLevel(logging.INFO)
        with log_reporter(err) as feed:  # a line every 10 s per run and drain in progress
            scheduler = Scheduler(
                state.config,
                sources=sources or (),
                once=once,
                max_concurrent=max_concurrent,
                progress=feed,
            )
            scheduler.install_signal_handlers()
            return scheduler.serve()

    code = run_command(body)
    raise typer.Exit(code)


def _runs_table(rows: list[dict[str, Any]]) -> Table:
    table = Table("run", "source", "kind", "status", "started", "s", "new", "chg", "del", "fail")
    for r in rows:
        c = r["counts"]
        table.add_row(
            r["short_id"],
            r["source"],
            r["kind"],
            r["status"] + (" (resumed)" if r["resumed"] else ""),
            (r["started_at"] or "")[:19],
            f"{r['duration_s']:.1f}",
            str(c["new"]),
            str(c["changed"]),
            str(c["deleted"]),
            str(c["failed"]),
        )
    return table


@app.command("runs")
def runs(
    args: list[str] = typer.Argument(
        None, help="[SOURCE] to list one source's runs, or `show RUN_ID` for one run."
    ),
    limit: int = typer.Option(20, "--limit", min=1, help="At most this many runs."),
    status: str = typer.Option(None, "--status", help=f"Only runs in this status: {RUN_STATUSES}."),
    as_json: bool = typer.Option(False, "--json", help="Print only the JSON report."),
) -> None:
    """Run history, newest first; `headwater runs show RUN_ID` for one run."""
    args = args or []
    if args[:1] == ["show"]:
        if len(args) != 2:
            usage_error(
                "`headwater runs show` takes exactly one RUN_ID; list ids with `headwater runs`."
            )
        _show(args[1], as_json)
        return
    if len(args) > 1:
        usage_error(
            f"`headwater runs` takes at most one SOURCE, got {len(args)}: {' '.join(args)}."
        )
    if status is not None and status not in RUN_STATUSES:
        usage_error(
            f"--status {status!r} is not a run status; expected one of {', '.join(RUN_STATUSES)}."
        )

    def body() -> None:
        with open_workspace() as ws:
            if args and not _known(ws, args[0]):
                ws.source_section(args[0])  # neither configured nor in the manifest: exit 2
            rows = ws.schedule_store().list_runs(args[0] if args else None, status, limit)
        if as_json:
            print_json({"runs": rows})
        elif rows:
            out.print(_runs_table(rows))
        else:
            out.print("no runs yet; start one with `headwater sync` or `headwater run`")

    run_command(body)


def _known(ws: Workspace, source_id: str) -> bool:
    """Configured, or a source removed from the config whose runs the manifest still has."""
    from headwater.sync.removal import known_source_ids

    configured = any(s.id == source_id for s in ws.config.source)
    return configured or source_id in known_source_ids(ws.manifest)


def _show(run_id: str, as_json: bool) -> None:
    def body() -> None:
        with open_workspace() as ws:
            row = ws.schedule_store().get_run(run_id)
        if row is None:
            raise NotFoundError(f"no run {run_id!r}; list run ids with `headwater runs --json`.")
        if as_json:
            print_json(row)
            return
        print_fields(row)

    run_command(body)


def _switch(source_id: str, paused: bool, as_json: bool) -> None:
    def body() -> None:
        with open_workspace() as ws:
            ws.source_section(source_id)
            changed = ws.schedule_store().set_paused(source_id, paused, lease_owner())
        if as_json:
            print_json({"source": source_id, "paused": paused, "changed": changed})
            return
        word = "paused" if paused else "resumed"
        out.print(f"{source_id} {word}" + ("" if changed else " (it already was)"), markup=False)

    run_command(body)


@source_app.command("pause")
def pause(
    source_id: str = typer.Argument(..., help="The source id."),
    as_json: bool = typer.Option(False, "--json", help="Print only the JSON report."),
) -> None:
    """Stop the scheduler from starting this source (a run in flight finishes)."""
    _switch(source_id, True, as_json)


@source_app.command("resume")
def resume(
    source_id: str = typer.Argument(..., help="The source id."),
    as_json: bool = typer.Option(False, "--json", help="Print only the JSON report."),
) -> None:
    """Let the scheduler start this source again."""
    _switch(source_id, False, as_json)
