"""``headwater events tail``: print change events as they arrive on NATS JetStream.

A consumer of ``[events] stream`` from now on (events published before it started are
not replayed), filtered by ``--subject`` (default ``<subject_prefix>.>``). One line per
event, or with ``--json`` one JSON object per line: the event's payload plus ``subject``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from headwater.cli.common import app, err, out, run_command, safe, state, usage_error
from headwater.config import load_config

events_app = typer.Typer(help="Change events sent to NATS JetStream ([events]).")
app.add_typer(events_app, name="events")


def _line(subject: str, payload: dict[str, Any]) -> str:
    extra = ""
    if payload.get("kind") == "applied":
        extra = f" index={payload.get('index')} generation={payload.get('generation')}"
    elif "access" in payload:
        extra = f" access={','.join(payload['access'])}"
    return (
        f"{payload.get('at')} {subject} {payload.get('source')}/{payload.get('object_id')} "
        f"r{payload.get('revision')}{extra}"
    )


@events_app.command("tail")
def events_tail(
    subject: str = typer.Option(
        None, "--subject", help="Only subjects matching this (default: <subject_prefix>.>)."
    ),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per event."),
    count: int = typer.Option(
        None, "--count", min=1, help="Exit after this many events (default: run until Ctrl-C)."
    ),
) -> None:
    """Print change events as they arrive (a JetStream consumer), until Ctrl-C."""
    from headwater.events.jetstream import tail  # nats: only for this command

    def body() -> None:
        section = load_config(Path(state.config)).config.events
        if section is None or section.type != "nats":
            usage_error(
                "`headwater events tail` reads NATS JetStream, but headwater.toml has "
                f"{'no [events] table' if section is None else 'type = ' + repr(section.type)}"
                '; add [events] type = "nats" (see docs/live.md)'
            )
            return
        wanted = subject or f"{section.subject_prefix}.>"
        seen = 0

        def on_event(subject_: str, payload: dict[str, Any]) -> bool:
            nonlocal seen
            seen += 1
            if as_json:
                print(json.dumps({"subject": subject_, **payload}), flush=True)
            else:
                out.print(safe(_line(subject_, payload), markup=False), markup=False)
            return count is None or seen < count

        def ready() -> None:
            err.print(
                safe(f"listening on {wanted} (stream {section.stream}); Ctrl-C to stop"),
                markup=False,
            )

        try:
            tail(section.address, section.stream, section.subject_prefix, wanted, on_event, ready)
        except KeyboardInterrupt:
            return

    run_command(body)
