"""The ``headwater`` entry point: register every command, tidy argv, run the Typer app.

Every command that prints a report takes ``--json`` (then stdout holds only that JSON).
``-v``, ``--log-format`` and ``--log-file`` (``cli/logs.py``) may come before or after
the command: ``main()`` moves them in front, where Typer expects them. The helpers the
commands share (``app``, ``run_command``, ``open_workspace``…) live in ``cli/common.py``
and are re-exported here, so ``headwater.cli.app`` names them as before.
"""

from __future__ import annotations

import gc
import importlib.util
import sys
from typing import Any, cast

import typer

from headwater.cli.common import (
    State,
    app,
    cancel_on_interrupt,
    err,
    fail,
    open_workspace,
    out,
    package_version,
    print_json,
    run_command,
    safe,
    state,
    usage_error,
)
from headwater.cli.shutdown import exit_now

__all__ = [
    "COLLECT_EVERY",
    "GLOBAL_FLAGS",
    "GLOBAL_VALUED",
    "LONG_RUNNING",
    "State",
    "app",
    "cancel_on_interrupt",
    "command_name",
    "err",
    "fail",
    "hoist_global_options",
    "main",
    "open_workspace",
    "out",
    "package_version",
    "print_json",
    "register_commands",
    "run_command",
    "safe",
    "state",
    "tune_collector",
    "usage_error",
]


def register_commands() -> typer.Typer:
    """Import every command module (each registers itself) and attach the help examples."""
    from headwater.cli import (  # noqa: F401
        commands,
        dlq,
        events,
        examples,
        hints,
        identity,
        ops,
        rebuild,
        rules,
        schedule,
        serve,
        tree,
        workers,
    )

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


# The cyclic collector's youngest generation is collected every 700 net allocations by
# default. A sync holds batches of up to tens of thousands of listed items, so the
# collector walked them again and again: 0.59 of 5.6 CPU-s in a 100,000-file no-op, 0.05
# at this threshold (docs/performance.md, "No-op at scale"). Garbage cycles wait a little
# longer (at most this many container objects, a few MB).
COLLECT_EVERY = 50_000


def tune_collector() -> None:
    """Collect the youngest generation every ``COLLECT_EVERY`` allocations, not 700."""
    first, second, third = gc.get_threshold()
    gc.set_threshold(max(first, COLLECT_EVERY), second, third)


def main() -> None:
    """Run the ``headwater`` command line on ``sys.argv`` (the console script's target)."""
    tune_collector()
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
