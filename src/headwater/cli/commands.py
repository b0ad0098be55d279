"""Everyday commands: init, sync, index, status, search, doc show, failures, validate."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from headwater.cli.common import (
    app,
    cancel_on_interrupt,
    err,
    open_workspace,
    out,
    print_json,
    run_command,
    safe,
    state,
)
from headwater.cli.lines import indexed_line, print_fields
from headwater.cli.progress import reporter
from headwater.cli.runlog import log_sync, sync_exit
from headwater.cli.tables import (
    failures_summary,
    print_status,
    print_sync,
    sync_permissions,
)
from headwater.reports import failure_dict
from headwater.scopes import Scope

if TYPE_CHECKING:
    from headwater.reports import SyncResult
    from headwater.search.results import SearchResult
    from headwater.search.service import CallerPrincipals

TEMPLATE = Path(__file__).with_name("init_template.toml")

doc_app = typer.Typer(help="Inspect documents in the manifest.", no_args_is_help=True)
app.add_typer(doc_app, name="doc")


@app.command()
def init(
    directory: Path = typer.Argument(Path("."), help="Where to create the workspace."),
) -> None:
    """Write a commented headwater.toml and a .gitignore for the state dir."""

    def body() -> None:
        directory.mkdir(parents=True, exist_ok=True)
        config = directory / "headwater.toml"
        if config.exists():
            from headwater.errors import ConfigError

            raise ConfigError(f"{config} already exists; edit it, or init another directory.")
        config.write_text(TEMPLATE.read_text(encoding="utf-8"), encoding="utf-8")
        ignore = directory / ".gitignore"
        lines = ignore.read_text(encoding="utf-8").splitlines() if ignore.exists() else []
        if ".headwater/" not in lines:
            ignore.write_text("\n".join([*lines, ".headwater/"]) + "\n", encoding="utf-8")
        out.print(
            f"wrote {safe(config, markup=False)} and {safe(ignore, markup=False)}; "
            "edit the [[source]] table, "
            "then `headwater sync`.",
            markup=False,
        )

    run_command(body)


@app.command()
def sync(
    sources: list[str] = typer.Argument(None, help="Source ids (default: all)."),
    as_json: bool = typer.Option(False, "--json", help="Print only the JSON report."),
    no_index: bool = typer.Option(False, "--no-index", help="Only update the manifest."),
    force: bool = typer.Option(False, "--force", help="Allow one prune past the safety fraction."),
    full: bool = typer.Option(
        False, "--full", help="Re-read from the beginning: no cursor, window or hint skips."
    ),
    permissions: bool = typer.Option(
        False, "--permissions", help="Refresh only ACLs and group memberships; read no content."
    ),
    no_wait: bool = typer.Option(
        False, "--no-wait", help="Celery executor: enqueue the runs, print their task ids, exit."
    ),
    max_concurrent: int = typer.Option(
        None,
        "--max-concurrent",
        min=1,
        help="Sources synced at once (default: [scheduler] max_concurrent, 2).",
    ),
) -> None:
    """Sync sources into the manifest and index what changed."""

    def body() -> int:
        with open_workspace() as ws, cancel_on_interrupt(ws):
            if no_wait:
                return _enqueue_only(
                    ws,
                    sources or None,
                    as_json,
                    index=not no_index,
                    force=force,
                    full=full,
                    permissions=permissions,
                )
            if permissions:
                return sync_permissions(ws, sources or None, as_json, not no_index)
            for warning in ws.warnings(sources or None):
                err.print(f"[yellow]warning:[/] {warning}")
            with reporter(err, as_json=as_json) as bars, bars.phase("sync"):
                ws.index_progress = bars.index
                result = ws.sync(
                    sources or None,
                    index=not no_index,
                    force=force,
                    full=full,
                    progress=bars.sync,
                    max_concurrent=max_concurrent or ws.config.scheduler.max_concurrent,
                    skip_busy=True,
                )
            return _report_sync(result, as_json, cancelled=ws.cancel.is_set())

    raise typer.Exit(run_command(body))


def _report_sync(result: SyncResult, as_json: bool, *, cancelled: bool) -> int:
    """Log and print a sync's result, warn of the sources skipped as busy; the exit code."""
    log_sync(result)
    if as_json:
        print_json(result.as_dict())
    else:
        print_sync(result)
    for skipped in result.skipped:  # stderr, with --json too
        err.print(
            f"[yellow]{safe(skipped.source)}: skipped (busy)[/]: being synced by "
            f"{safe(skipped.holder)} until {skipped.until}; not run here. Run "
            f"`headwater sync {safe(skipped.source)}` once that run ends."
        )
    return sync_exit(result, cancelled=cancelled)


def _enqueue_only(
    ws: Any,
    sources: list[str] | None,
    as_json: bool,
    *,
    index: bool,
    force: bool,
    full: bool,
    permissions: bool,
) -> int:
    """``sync --no-wait``: enqueue one sync task per source and print the task ids."""
    from headwater.errors import ConfigError

    if permissions:
        raise ConfigError(
            "sync --no-wait does not enqueue --permissions runs; run `headwater sync "
            "--permissions` without --no-wait."
        )
    if full:  # `sync --full` is not dispatched to workers either: say where it runs
        raise ConfigError(
            "sync --no-wait does not enqueue --full runs; run `headwater sync --full` "
            'without --no-wait, with the local executor (`[executor] type = "local"`, on '
            "one worker host)."
        )
    if ws.config.executor.type != "celery":
        raise ConfigError(
            f"sync --no-wait needs the celery executor, but [executor] type is "
            f'"{ws.config.executor.type}"; set `[executor] type = "celery"`, or drop --no-wait.'
        )
    from headwater.executor.dispatch import enqueue_sync

    ids = [s.id for s in ws.sources.selected(sources)]
    queued = enqueue_sync(ws.runtime, ids, force=force, index=index)
    if as_json:
        print_json({"queued": [q.as_dict() for q in queued]})
        return 0
    for q in queued:
        note = " (already queued or running)" if q.already else ""
        out.print(f"{safe(q.source_id)}: queued as task {q.task_id}{note}")
    return 0


@app.command()
def index(
    as_json: bool = typer.Option(False, "--json", help="Print only the JSON report."),
) -> None:
    """Drain pending work from the manifest into every index."""

    def body() -> None:
        with open_workspace() as ws, reporter(err, as_json=as_json) as bars:
            ws.index_progress = bars.index
            report = ws.index()
        if as_json:
            print_json(report.as_dict())
        else:
            out.print(f"{indexed_line(report)}; took {report.duration_s:.1f} s", markup=False)

    run_command(body)


@app.command()
def status(
    as_json: bool = typer.Option(False, "--json", help="Print only the JSON report."),
) -> None:
    """Documents, failures and last run per source; pending work per index."""

    def body() -> None:
        with open_workspace() as ws:
            report = ws.status().as_dict()
        if as_json:
            print_json(report)
            return
        print_status(report)

    run_command(body)


@app.command()
def search(
    query: str = typer.Argument(..., help="What to look for."),
    user: str = typer.Option(None, "--as", help="Search as this user (email)."),
    groups: list[str] = typer.Option([], "--group", help="A group of the user (repeatable)."),
    k: int = typer.Option(10, "--k", help="How many results."),
    mode: str = typer.Option("hybrid", "--mode", help="hybrid, vector or keyword."),
    sources: list[str] = typer.Option([], "--source", help="Limit to these sources."),
    under: list[str] = typer.Option(
        [], "--under", help="Only documents under SOURCE:PATH (a folder; repeatable)."
    ),
    index_name: str = typer.Option(None, "--index", help="Which configured index to search."),
    chunks: bool = typer.Option(False, "--chunks", help="Top chunks, not one result per document."),
    min_score: float = typer.Option(
        None, "--min-score", help="Leave out results scoring below this (see docs/cli.md)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print only the JSON report."),
    explain: bool = typer.Option(
        False, "--explain", help="Show the principals used: user, given and synced groups."
    ),
) -> None:
    """Search as a user: only what their email, groups and PUBLIC may see."""

    def body() -> None:
        with open_workspace() as ws:
            used = ws.principals_of(user, groups)
            results = ws.search(
                query,
                user=user,
                groups=groups,
                k=k,
                mode=mode,
                sources=sources or None,
                index=index_name,
                per_document=not chunks,
                min_score=min_score,
                scopes=[Scope.parse(u) for u in under] or None,
            )
        _print_results(results, used, as_json=as_json, explain=explain)

    run_command(body)


def _print_results(
    results: list[SearchResult], used: CallerPrincipals, *, as_json: bool, explain: bool
) -> None:
    """Print a search's results (and, with ``--explain``, the principals it ran as)."""
    if as_json:
        print_json(
            {
                "results": [r.as_dict() for r in results],
                **({"principals": used.as_dict()} if explain else {}),
            }
        )
        return
    if explain:
        synced = ", ".join(
            f"{g.group}{f' {g.label}' if g.label != g.group else ''} (from {g.source_id}"
            f"{f', via {g.via}' if g.via else ''})"
            for g in used.synced_groups
        )
        out.print(
            f"principals: user {safe(used.user or '-')}; groups given: "
            f"{safe(', '.join(used.given_groups) or '-')}; groups synced: {safe(synced or '-')}"
        )
    if not results:
        out.print("no results visible to this user")
    for n, r in enumerate(results, 1):
        out.print(
            f"[bold]{n}. {safe(r.title)}[/]  ({safe(r.source)}, score {r.score:.4f})\n   {safe(r.locator)}\n   {safe(r.snippet)}"
        )


@doc_app.command("show")
def doc_show(
    document_id: str = typer.Argument(None, help="The document id."),
    source: str = typer.Option(None, "--source", help="Source id (with --object)."),
    object_id: str = typer.Option(None, "--object", help="The source's object id."),
    as_json: bool = typer.Option(False, "--json", help="Print only the JSON report."),
) -> None:
    """Everything the manifest knows about one document."""

    def body() -> None:
        with open_workspace() as ws:
            report = ws.document(document_id, source=source, object_id=object_id).as_dict()
        if as_json:
            print_json(report)
        else:
            print_fields(report)

    run_command(body)


@app.command()
def failures(
    source: str = typer.Option(None, "--source", help="Only this source."),
    as_json: bool = typer.Option(False, "--json", help="Print only the JSON report."),
    summary: bool = typer.Option(
        False, "--summary", help="Group by source, stage and cause, each with its fix."
    ),
) -> None:
    """Open failure records (retrying and dead-lettered)."""
    if summary:
        run_command(lambda: failures_summary(source, as_json))
        return

    def body() -> None:
        with open_workspace() as ws:
            if source is not None:
                ws.require_known_source(source)
            rows = [failure_dict(f) for f in ws.failures(source)]
        if as_json:
            print_json({"failures": rows})
            return
        if not rows:
            out.print("no open failures")
        for f in rows:
            out.print(
                safe(
                    f"#{f['id']} [{f['status']}] {f['source']}/{f['object_id']} {f['stage']} "
                    f"{f['error_class']}: {f['message']}",
                    markup=False,
                ),
                markup=False,
            )

    run_command(body)


@app.command()
def validate(source_id: str = typer.Argument(..., help="The source to probe.")) -> None:
    """Probe a source's connection and credentials; one line says what to fix."""

    def body() -> None:
        with open_workspace() as ws:
            ws.validate(source_id)
        out.print(f"{source_id}: ok")

    run_command(body)


_ = state
