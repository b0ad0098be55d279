"""The ``headwater`` command line: Typer commands over the Workspace API.

Every command that prints a report takes ``--json`` (then stdout holds only that JSON).
Errors are turned into one line saying what to do, and an exit code, in exactly one
place (``run_command``): 0 for success (a run that completed with errors included),
1 when a run failed, 2 for usage and configuration errors. ``-v`` adds tracebacks.
"""

from __future__ import annotations

import json
import logging
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import typer
from rich.console import Console

from headwater.errors import EXIT_USAGE, HeadwaterError
from headwater.workspace import Workspace

T = TypeVar("T")

app = typer.Typer(
    name="headwater",
    help="Keep a private corpus and its search indexes in sync.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
err = Console(stderr=True, highlight=False)
out = Console(highlight=False, soft_wrap=True)
if not out.is_terminal:
    out.width = 160  # piped output: keep report tables whole


class State:
    config: Path = Path("headwater.toml")
    verbose: int = 0


state = State()


@app.callback()
def main_options(
    config: Path = typer.Option(
        Path("headwater.toml"), "--config", "-c", help="Path to headwater.toml (or its directory)."
    ),
    verbose: int = typer.Option(0, "--verbose", "-v", count=True, help="More logging; tracebacks."),
) -> None:
    """Keep a private corpus and its search indexes in sync."""
    state.config = config
    state.verbose = verbose
    level = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    logging.basicConfig(
        level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")
    sys.stdout.flush()


def fail(message: str, code: int) -> None:
    err.print(f"[bold red]error:[/] {message}", markup=True, highlight=False)
    raise typer.Exit(code)


def run_command(body: Callable[[], T]) -> T:
    """Run a command body; the one place errors become a line and an exit code."""
    try:
        return body()
    except typer.Exit:
        raise
    except HeadwaterError as exc:
        if state.verbose:
            err.print_exception()
        fail(str(exc), exc.exit_code)
    except KeyboardInterrupt:
        fail("interrupted", 130)
    except Exception as exc:  # a bug, not a user error: still one line, unless -v
        if state.verbose:
            err.print_exception()
        fail(
            f"unexpected {type(exc).__name__}: {exc}. This is a bug in Headwater; "
            "rerun with -v for the traceback and report it.",
            1,
        )
    raise AssertionError("unreachable")


@contextmanager
def open_workspace() -> Iterator[Workspace]:
    ws = Workspace.open(state.config)
    try:
        yield ws
    finally:
        ws.close()


@contextmanager
def cancel_on_interrupt(ws: Workspace) -> Iterator[None]:
    """First Ctrl-C: finish the current batch and stop cleanly. Second: stop now."""

    def handler(signum: int, frame: object) -> None:
        if ws.cancel.is_set():
            raise KeyboardInterrupt
        ws.cancel.set()
        err.print("[yellow]stopping after the current batch… (Ctrl-C again to abort)[/]")

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def main() -> None:
    from headwater.cli import commands, dlq, ops, rebuild, schedule  # noqa: F401  (registers)

    app()


def usage_error(message: str) -> None:
    fail(message, EXIT_USAGE)
