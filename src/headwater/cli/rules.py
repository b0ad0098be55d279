"""``headwater rules test SOURCE``: what the source's ``[[source.rules]]`` would include
and exclude, decided on a live listing of the source; nothing is fetched or written."""

from __future__ import annotations

import typer

from headwater.cli.common import app, open_workspace, out, print_json, run_command, safe

rules_app = typer.Typer(
    help="Sync rules ([[source.rules]]): test them against a live listing.",
    no_args_is_help=True,
)
app.add_typer(rules_app, name="rules")


@rules_app.command("test")
def rules_test(
    source: str = typer.Argument(..., help="The source id."),
    limit: int = typer.Option(
        100, "--limit", min=1, max=1_000_000, help="Decide at most this many listed documents."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print only the JSON report."),
) -> None:
    """List what the source's rules would include and exclude (writes nothing)."""

    def body() -> None:
        with open_workspace() as ws:
            report = ws.rules_test(source, limit=limit)
        if as_json:
            print_json(report.as_dict())
            return
        for item in report.items:
            why = f"rule {item.rule + 1}" if item.rule is not None else "no rule: the globs"
            line = f"{item.decision:<7} {item.object_id}  ({why})"
            out.print(safe(line, markup=False), markup=False)
        more = "" if report.complete else f" (stopped at --limit {report.limit})"
        out.print(
            f"{report.included} included, {report.excluded} excluded of "
            f"{len(report.items)} listed{more}; {report.rules} rules",
            markup=False,
        )

    run_command(body)
