"""One worked example per command, shown as the "Example:" paragraph of its ``--help``.

Kept in one table, not in each docstring, so the examples read as a set and a test can
demand one for every registered command (a new command without an example fails it).
``attach`` sets each command's Typer epilog before the app runs.
"""

from __future__ import annotations

import typer

EXAMPLES: dict[str, str] = {
    "init": "headwater init ./kb",
    "sync": "headwater sync docs wiki --json > sync-report.json   # --full re-reads from scratch",
    "index": "headwater index -v",
    "status": "headwater status --json",
    "hints": "headwater hints docs --json   # queued change notifications, last lag",
    "search": 'headwater search "vacation policy" --as ann@acme.com --group staff --k 5 --explain',
    "whois": "headwater whois ann@acme.com --json",
    "rules test": "headwater rules test wiki --limit 50",
    "doc show": "headwater doc show --source docs --object guides/vacation.md",
    "failures": "headwater failures --source docs --json",
    "validate": "headwater validate docs",
    "prune": "headwater prune docs --dry-run",
    "reconcile": "headwater reconcile --sink main --repair",
    "housekeeping": "headwater housekeeping --json   # what `headwater run` does every 10 minutes",
    "run": "headwater run --once --log-format json --log-file /var/log/headwater.jsonl",
    "runs": "headwater runs docs --status failed --limit 5",
    "source remove": "headwater source remove old-wiki --dry-run --json",
    "source pause": "headwater source pause docs",
    "source resume": "headwater source resume docs",
    "serve": "HEADWATER_APP_KEY=... headwater serve --host 0.0.0.0 --port 8700 --with-scheduler",
    "worker": "HEADWATER_CONFIG=/etc/headwater/headwater.toml headwater worker --queues sync,index --concurrency 4",
    "workers": "headwater workers --json",
    "rebuild": "headwater rebuild main --no-switch --json",
    "rebuild status": "headwater rebuild status --json",
    "dlq list": "headwater dlq list --stage embed",
    "dlq show": "headwater dlq show 42",
    "dlq redrive": "headwater dlq redrive --stage fetch --rate 5",
    "dlq drop": "headwater dlq drop 42 43",
    "events tail": "headwater events tail --subject 'headwater.acme.docs.>' --json",
    "tree": "headwater tree docs guides --as ann@corp.com --json",
}


def command_name(info: typer.models.CommandInfo) -> str:
    """The name a registered command is typed as (its callback's name, dashed, when unnamed)."""
    if info.name:
        return info.name
    assert info.callback is not None
    return info.callback.__name__.replace("_", "-")


def walk(app: typer.Typer, prefix: str = "") -> list[tuple[str, typer.models.CommandInfo]]:
    """Every registered command as (path, info), sub-apps included."""
    found = [(f"{prefix}{command_name(c)}", c) for c in app.registered_commands]
    for group in app.registered_groups:
        assert group.typer_instance is not None and group.name
        found += walk(group.typer_instance, f"{prefix}{group.name} ")
    return found


def attach(app: typer.Typer) -> None:
    """Set each command's help epilog to its example, unless it already has one."""
    for path, info in walk(app):
        example = EXAMPLES.get(path)
        if example is not None and not info.epilog:
            info.epilog = f"Example: {example}"
