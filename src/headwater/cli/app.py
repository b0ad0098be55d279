"""The ``headwater`` command line: Typer commands over the Workspace API.

Every command that prints a report takes ``--json`` (then stdout holds only that JSON).
Errors are turned into one line saying what to do, and an exit code, in exactly one
place (``run_command``, with the codes of ``cli/exits.py``): 0 done, 1 a run failed,
2 usage or configuration error, 3 done but a person must look, 130 cancelled.
``-v``, ``--log-format`` and ``--log-file`` (``cli/logs.py``) may come before or after
the command: ``main()`` moves them in front, where Typer expects them.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import re
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, TypeVar, cast

import typer
from rich.console import Console
from rich.markup import escape
from sqlalchemy.exc import DatabaseError

from headwater.cli import exits, logs
from headwater.cli.shutdown import exit_now
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
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")
    sys.stdout.flush()


def fail(message: str, code: int) -> None:
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


def register_commands() -> typer.Typer:
    """Import every command module (each registers itself) and attach the help examples."""
    from headwater.cli import commands, dlq, examples, ops, rebuild, schedule, serve, workers  # noqa: F401

    examples.attach(app)
    untyped_flags()
    return app


def untyped_flags() -> None:
    """Help without a type beside flags: typer's Rich help printed ``--json <bool>`` and
    ``-v <int>`` as if they took a value. A flag (``is_flag``, ``count``) takes none, so
    its type column stays empty; options that take a value keep ``<str>``, ``<int>``."""
    from typer.core import TyperOption

    typed = TyperOption.display_type_rich
    if getattr(typed, "untyped_flags", False):
        return

    def display_type_rich(self: TyperOption, ctx: Any) -> str | None:
        return None if self.is_flag or self.count else typed(self, ctx)

    display_type_rich.untyped_flags = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


def usage_error_line(exc: Exception) -> None:
    """Click's usage errors (an unknown option, a missing argument) as one error line
    naming the help to read, like every other error, instead of Rich's boxed panel."""
    if type(exc).__name__ == "NoArgsIsHelpError":
        return  # the help was printed; nothing went wrong
    ctx: Any = getattr(exc, "ctx", None)
    command = ctx.command_path if ctx is not None else "headwater"
    message = str(getattr(exc, "format_message", lambda: str(exc))()).rstrip(".")
    option = getattr(exc, "option_name", None)
    if type(exc).__name__ == "NoSuchOption" and command.endswith(" search") and option:
        # `headwater search -foo`: click read the query as options (-f -o -o).
        token = next((a for a in sys.argv[1:] if a.startswith(option)), option)
        message += f"; a query that starts with '-' goes after `--`: `{command} -- {token}`"
    err.print("[bold red]error:[/] ", end="", markup=True)
    err.print(
        f"{safe(message, markup=False)}; see `{command} --help`.", markup=False, highlight=False
    )


def lazy_rich_utils() -> Any:
    """``typer.rich_utils``, executed only when typer first uses it (for a usage error or
    a help page): importing it pulls in rich.markdown and markdown-it, ~50 ms that every
    other command would pay. Attributes set before then survive the load (LazyLoader)."""
    name = "typer.rich_utils"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.loader is not None
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    typer.rich_utils = module  # type: ignore[attr-defined]  # what `from . import` reads
    return module


def main() -> None:
    register_commands()
    # typer prints usage errors through this function: one line instead of a boxed panel
    lazy_rich_utils().rich_format_error = cast(Any, usage_error_line)
    sys.argv[1:] = hoist_global_options(sys.argv[1:])
    try:
        app(prog_name="headwater")
    except SystemExit as done:
        if command_name(sys.argv[1:]) not in LONG_RUNNING:
            exit_now(done.code)  # skips Python's ~0.1 s teardown when nothing depends on it
        raise


GLOBAL_FLAGS = ("-v", "-vv", "-vvv", "--verbose")
GLOBAL_VALUED = ("--log-format", "--log-file", "--config", "-c")
LONG_RUNNING = ("serve", "worker", "run")  # services: they end the normal way


def command_name(args: list[str]) -> str | None:
    """The command in hoisted ``args`` (global options and their values skipped)."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in GLOBAL_VALUED:
            i += 2
        elif arg.startswith("-"):
            i += 1
        else:
            return arg
    return None


def hoist_global_options(args: list[str]) -> list[str]:
    """Move the logging and config options found after the command to the front.

    Typer takes global options only before the command; operators type them anywhere
    (``headwater sync -v``). Arguments after ``--`` are left alone.
    """
    front: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            rest.extend(args[i:])
            break
        if arg in GLOBAL_FLAGS:
            front.append(arg)
        elif arg in GLOBAL_VALUED and i + 1 < len(args):
            front.extend(args[i : i + 2])
            i += 1
        elif arg.split("=", 1)[0] in GLOBAL_VALUED and "=" in arg:
            front.append(arg)
        else:
            rest.append(arg)
        i += 1
    return front + rest


def usage_error(message: str) -> None:
    fail(message, EXIT_USAGE)
