"""The dead-letter queue: list, show, redrive and drop failed documents."""

from __future__ import annotations

import typer

from headwater.cli.common import (
    app,
    open_workspace,
    out,
    print_json,
    run_command,
    safe,
    usage_error,
)
from headwater.cli.lines import print_fields
from headwater.errors import NotFoundError
from headwater.reports import failure_dict
from headwater.sync.redrive import UNREADABLE, Skipped

dlq_app = typer.Typer(
    help="The dead-letter queue of documents that exhausted their attempts.", no_args_is_help=True
)
app.add_typer(dlq_app, name="dlq")


@dlq_app.command("list")
def dlq_list(
    source: str = typer.Option(None, "--source", help="Only this source."),
    stage: str = typer.Option(
        None, "--stage", help="Only this stage (fetch, parse, embed, index…)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print only the JSON report."),
) -> None:
    """Dead-lettered documents, deletes first."""

    def body() -> None:
        with open_workspace() as ws:
            if source is not None:
                ws.require_known_source(source)
            rows = [failure_dict(f) for f in ws.dead_letters(source, stage)]
        if as_json:
            print_json({"entries": rows})
            return
        if not rows:
            out.print("the dead-letter queue is empty")
        for f in rows:
            out.print(
                safe(
                    f"#{f['id']} {f['source']}/{f['object_id']} {f['stage']} "
                    f"{f['error_class']} (x{f['attempts']}): {f['message']}",
                    markup=False,
                ),
                markup=False,
            )

    run_command(body)


@dlq_app.command("show")
def dlq_show(
    entry_id: int = typer.Argument(..., help="The entry id."),
    as_json: bool = typer.Option(False, "--json", help="Print only the JSON report."),
) -> None:
    """One DLQ entry in full."""

    def body() -> None:
        with open_workspace() as ws:
            entry = ws.failure(entry_id)
        if entry is None:
            raise NotFoundError(f"no DLQ entry #{entry_id}; list them with `headwater dlq list`.")
        data = failure_dict(entry)
        if as_json:
            print_json(data)
        else:
            print_fields(data)

    run_command(body)


@dlq_app.command("redrive")
def dlq_redrive(
    entry_ids: list[int] = typer.Argument(None, help="Entry ids."),
    all_entries: bool = typer.Option(False, "--all", help="Every dead-lettered entry."),
    stage: str = typer.Option(None, "--stage", help="Every entry at this stage."),
    rate: float = typer.Option(0.0, "--rate", help="At most N entries per second (0: no limit)."),
    as_json: bool = typer.Option(False, "--json", help="Print only the JSON report."),
) -> None:
    """Replay entries through the normal pipeline; successes resolve their entries."""
    if not entry_ids and not all_entries and not stage:
        usage_error("name entry ids, or use --all or --stage STAGE")

    def body() -> None:
        with open_workspace() as ws:
            report = ws.redrive(entry_ids or [], all_entries=all_entries, stage=stage, rate=rate)
        if as_json:
            print_json(report.as_dict())
        else:
            out.print(
                f"redriven {report['redriven']}: {report['resolved']} resolved, {report['still_failing']} still failing"
            )
            print_skipped(report.skipped)

    run_command(body)


def print_skipped(skipped: tuple[Skipped, ...]) -> None:
    """The entries ``--all``/``--stage`` left dead, so "redriven 0" is never the whole story."""
    if not skipped:
        return
    out.print(f"skipped {len(skipped)}, left dead: {UNREADABLE}:", markup=False)
    for s in skipped:
        out.print(safe(f"  #{s.entry_id} {s.source}/{s.object_id} {s.stage}", markup=False),
                  markup=False)  # fmt: skip
    ids = " ".join(str(s.entry_id) for s in skipped[:10])
    out.print(
        "push those documents again at a higher version, or forget the entries: "
        f"`headwater dlq drop {ids}{' …' if len(skipped) > 10 else ''}`",
        markup=False,
    )


@dlq_app.command("drop")
def dlq_drop(entry_ids: list[int] = typer.Argument(..., help="Entry ids to forget.")) -> None:
    """Forget entries (the documents stay as they are)."""

    def body() -> None:
        with open_workspace() as ws:
            missing = sorted({n for n in entry_ids if ws.failure(n) is None})
            if missing:  # as `dlq show` and `redrive`: nothing is dropped then
                raise NotFoundError(
                    f"no DLQ entry {', '.join(f'#{n}' for n in missing)}; nothing was dropped. "
                    "List them with `headwater dlq list`."
                )
            dropped = ws.drop_failures(entry_ids)
        out.print(f"dropped {dropped} entries")

    run_command(body)
