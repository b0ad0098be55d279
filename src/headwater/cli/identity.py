"""``headwater whois USER``: every name and group a user's searches run as, and why.

The same expansion a search does (``Workspace.principals_of``): the user's canonical
name and aliases (``[identity]``, each with where it was given: the table, a line of
``aliases_file``, the query), the groups each name is a direct member of, the
groups those are nested in (with the group each came through), and the resulting
principals. Nothing is written; the manifest is read as it is now.
"""

from __future__ import annotations

import typer

from headwater.cli.common import app, open_workspace, out, print_json, run_command, safe


@app.command()
def whois(
    user: str = typer.Argument(..., help="The user's email (or any alias of it)."),
    group: list[str] = typer.Option(
        [], "--group", help="A group the caller would pass too (repeatable)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print only the JSON report."),
) -> None:
    """Show every alias, group and principal a user's searches run as, and why."""

    def body() -> None:
        with open_workspace() as ws:
            caller = ws.principals_of(user, group)
        if as_json:
            print_json(caller.as_dict())
            return
        lines = [f"user: {caller.user}"]
        if caller.alias_error:
            lines.append(f"aliases incomplete: {caller.alias_error}")
        if caller.aliases:
            lines.append(f"aliases ([identity]): {', '.join(caller.aliases)}")
            origins = caller.alias_origins
            lines += [f"alias {a}: from {origins[a]}" for a in caller.aliases if a in origins]
        lines += [f"group given: {g}" for g in caller.given_groups]
        for g in caller.synced_groups:
            why = f"member of {g.via}, which is nested in it" if g.via else "direct member"
            label = f" {g.label}" if g.label != g.group else ""
            lines.append(f"group {g.group}{label}: from {g.source_id}, {why}")
        if not caller.synced_groups:
            lines.append("no synced groups")
        lines.append(f"principals: {', '.join(caller.principals)}")
        for line in lines:
            out.print(safe(line, markup=False), markup=False)

    run_command(body)
