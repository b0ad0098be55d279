"""The exit codes of every command, decided in this one module.

0: done (every run succeeded or completed with errors); 1: a run failed; 2: usage or
configuration error (also a run that failed on one: a missing filesystem ``root``); 3:
done, but a person must look (a prune blocked by the safety fraction, an index that
drifted from the manifest and was not repaired); 75: done, but ``sync`` skipped a source
another process was syncing (EX_TEMPFAIL: run it again later); 130: cancelled by Ctrl-C.
Automation (cron, systemd, CI) branches on these; docs/cli.md lists them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from headwater.errors import (
    EXIT_BUSY,
    EXIT_CANCELLED,
    EXIT_NEEDS_PERSON,
    EXIT_OK,
    EXIT_RUN_FAILED,
    EXIT_USAGE,
    ConfigError,
    HeadwaterError,
)

__all__ = [
    "EXIT_BUSY",
    "EXIT_CANCELLED",
    "EXIT_NEEDS_PERSON",
    "EXIT_OK",
    "EXIT_RUN_FAILED",
    "EXIT_USAGE",
    "failed_on_config",
    "for_error",
    "for_prunes",
    "for_reconcile",
    "for_runs",
]


def for_runs(
    statuses: Iterable[str],
    *,
    needs_person: bool,
    cancelled: bool = False,
    config_error: bool = False,
    busy: bool = False,
) -> int:
    """A batch of runs: cancelled beats a configuration error (a run that failed on a
    ``ConfigError``: a missing filesystem root, a refused credential; ``config_error``),
    which beats failed, which beats needs-a-person, which beats busy (a source skipped
    because another process held its lease)."""
    seen = set(statuses)
    if cancelled or "cancelled" in seen:
        return EXIT_CANCELLED
    if config_error:
        return EXIT_USAGE
    if "failed" in seen:
        return EXIT_RUN_FAILED
    if needs_person:
        return EXIT_NEEDS_PERSON
    return EXIT_BUSY if busy else EXIT_OK


def for_prunes(reports: Iterable[Mapping[str, Any]]) -> int:
    """``headwater prune``: 3 when any source's prune was blocked by the safety fraction."""
    blocked = any(r.get("status") == "blocked" for r in reports)
    return EXIT_NEEDS_PERSON if blocked else EXIT_OK


def for_reconcile(report: Mapping[str, Any], *, repair: bool) -> int:
    """``headwater reconcile``: 3 when drift was found and left unrepaired."""
    drift = any(not d["in_sync"] for d in report["sinks"].values())
    return EXIT_NEEDS_PERSON if drift and not repair else EXIT_OK


def failed_on_config(error: str | None) -> bool:
    """Whether a run's recorded ``error`` (``"ClassName: message"``, as the sync runner
    writes it) names ``ConfigError`` or one of its subclasses."""
    name = (error or "").split(":", 1)[0]
    pending: list[type[BaseException]] = [ConfigError]
    while pending:
        cls = pending.pop()
        if cls.__name__ == name:
            return True
        pending.extend(cls.__subclasses__())
    return False


def for_error(exc: BaseException) -> int:
    """The exit code for ``exc``: its own for a HeadwaterError, 130 for Ctrl-C, else 1."""
    if isinstance(exc, KeyboardInterrupt):
        return EXIT_CANCELLED
    if isinstance(exc, HeadwaterError):
        return exc.exit_code
    return EXIT_RUN_FAILED
