"""``headwater tree SOURCE [PATH]``: the folders and documents under a folder, as the
caller may see them.

The same caller as ``headwater search`` (``--as``, ``--group``, synced groups and
aliases expanded); nodes are derived from the manifest's documents the caller may see
(``headwater.search.tree``), so a folder holding only hidden documents is not listed.
A node's ``path`` is what ``headwater search --under SOURCE:PATH`` takes.
"""

from __future__ import annotations

import typer

from headwater.cli.common import app, open_workspace, out, print_json, run_command, safe


@app.command()
def tree(
    source: str = typer.Argument(..., help="The source id."),
    path: str = typer.Argument("", help="A folder path in the source (default: its root)."),
    user: str = typer.Option(None, "--as", help="Browse as this user (email)."),
    groups: list[str] = typer.Option([], "--group", help="A group of the user (repeatable)."),
    as_json: bool = typer.Option(False, "--json", help="Print only the JSON report."),
) -> None:
    """List the folders and documents under PATH that the user may see."""

    def body() -> None:
        with open_workspace() as ws:
            report = ws.tree(source, path, user=user, groups=groups)
        if as_json:
            print_json(report.as_dict())
            return
        where = f"{report.source}:{report.path}" if report.path else f"{report.source}:"
        out.print(safe(where, markup=False), markup=False)
        if not report.nodes:
            out.print("nothing visible to this user here", markup=False)
        for node in report.nodes:
            if node.kind == "folder":
                line = f"  {node.name}/  ({node.documents} documents)"
            else:
                line = f"  {node.name}  {node.title or ''}".rstrip()
            out.print(safe(line, markup=False), markup=False)
        if report.unplaced and not report.path:
            out.print(f"  ({report.unplaced} documents without a folder path)", markup=False)

    run_command(body)
