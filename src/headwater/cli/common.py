"""What every ``headwater`` command shares: the Typer app, the consoles, the global options.

Command modules (``commands``, ``ops``, ``dlq``…) import this module and register
themselves on ``app``; the entry point (``cli/app.py``) imports them all and runs it.
Errors are turned into one line saying what to do, and an exit code, in exactly one
place (``run_command``, with the codes of ``cli/exits.py``): 0 done, 1 a run failed,
2 usage or configuration error, 3 done but a person must look, 130 cancelled.
"""

from __future__ import annotations

import json
import logging
import re
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from sqlalchemy.exc import DatabaseError

from headwater.cli import exits, logs
from headwater.errors import EXIT_USAGE, HeadwaterError
from headwater.workspace import Workspace

T = TypeVar("T")
log = logging.getLogger("headwater.cli")

app = typer.Typer(
    name="headwater",
    help="Keep a private corpus and its search indexes in sync.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
)
err = Console(stderr=True, highlight=False)
if not err.is_terminal:
    err.width, err.soft_wrap = 10_000, True  # piped errors: one unwrapped line each
out = Console(highlight=False, soft_wrap=True)
if not out.is_terminal:
    out.width = 160  # piped output: keep report tables whole


class State:
    """The global options of this invocation (``--config``, ``-v``), set by the callback."""

    config: Path = Path("headwater.toml")
    verbose: int = 0


state = State()


@app.callback()
def main_options(
    config: Path = typer.Option(
        Path("headwater.toml"), "--config", "-c", help="Path to headwater.toml (or its directory)."
    ),
    verbose: int = typer.Option(
        0, "--verbose", "-v", count=True, help="INFO logs (-vv: DEBUG); tracebacks."
    ),
    log_format: str = typer.Option("text", "--log-format", help="Logs as text or json lines."),
    log_file: Path = typer.Option(None, "--log-file", help="Also append the logs to this file."),
    show_version: bool = typer.Option(
        False,
        "--version",
        is_eager=True,
        callback=lambda value: _print_version() if value else None,
        help="Print the version and exit.",
    ),
) -> None:
    """Keep a private corpus and its search indexes in sync."""
    state.config = config
    state.verbose = verbose
    logs.register_config_secrets(config)
    run_command(lambda: logs.configure(verbose, log_format, log_file))


def _print_version() -> None:
    out.print(f"headwater {package_version()}", markup=False)
    raise typer.Exit(0)


def package_version() -> str:
    """The installed version of Headwater, or ``"unknown"`` in an uninstalled tree."""
    try:
        return version("headwater")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "unknown"


# C0/C1 controls, line/paragraph separators and bidi overrides: never raw to a terminal.
UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def safe(value: object, *, markup: bool = True) -> str:
    """A value from a source (file name, object id, title, message) made safe to print:
    control characters as escapes (``\\x1b``), Rich markup escaped unless ``markup=False``
    (for lines printed with ``markup=False``). The one helper for human output."""
    text = UNSAFE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), str(value))
    return escape(text) if markup else text


def print_json(data: Any) -> None:
    """Write ``data`` to stdout as indented JSON (the ``--json`` output of every report)."""
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")
    sys.stdout.flush()


def fail(message: str, code: int) -> None:
    """Print ``message`` (secrets redacted) as one error line and exit with ``code``."""
    err.print("[bold red]error:[/] ", end="", markup=True)
    err.print(logs.redact(message), markup=False, highlight=False)
    raise typer.Exit(code)


def run_command(body: Callable[[], T]) -> T:
    """Run a command body; the one place errors become a line and an exit code."""
    try:
        return body()
    except typer.Exit:
        raise
    except HeadwaterError as exc:
        if state.verbose:
            _traceback()
        fail(str(exc), exits.for_error(exc))
    except KeyboardInterrupt as exc:
        fail("interrupted; the run in flight is recorded as interrupted", exits.for_error(exc))
    except DatabaseError as exc:  # the manifest failed under us (damaged file, lost server)
        if state.verbose:
            _traceback()
        fail(
            f"the manifest database failed: {' '.join(str(exc.orig).split())}. "
            "If it is a damaged SQLite file, "
            "restore it from a backup, or move it away, run `headwater sync --no-index` "
            "to rebuild it and `headwater reconcile --adopt`; a database server: check "
            "that it runs.",
            1,
        )
    except Exception as exc:  # a bug, not a user error: still one line, unless -v
        if state.verbose:
            _traceback()
        fail(
            f"unexpected {type(exc).__name__}: {exc}. This is a bug in Headwater; "
            "rerun with -v for the traceback and report it.",
            1,
        )
    raise AssertionError("unreachable")


def _traceback() -> None:
    import traceback

    err.print(logs.redact(traceback.format_exc()), markup=False, highlight=False)


@contextmanager
def open_workspace() -> Iterator[Workspace]:
    """The workspace of ``--config``, opened for one command and closed after it."""
    ws = Workspace.open(state.config)
    log.info(
        "workspace %s: manifest %s, %d sources, %d indexes",
        state.config,
        ws.loaded.manifest_url,
        len(ws.config.source),
        len(ws.index_sections),
    )
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


def usage_error(message: str) -> None:
    """Print ``message`` as one error line and exit with the usage code (2)."""
    fail(message, EXIT_USAGE)
