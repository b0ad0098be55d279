"""What one scheduled run came back as, the exit code of ``run --once``, and the fields
of the scheduler's log lines."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from headwater.errors import EXIT_CANCELLED, EXIT_NEEDS_PERSON, EXIT_OK, EXIT_RUN_FAILED
from headwater.indexer.report import IndexProgress
from headwater.manifest.records import RunCounts
from headwater.manifest.runs import FAILED
from headwater.scheduler.due import SYNC

SKIPPED = "skipped"
PERMISSIONS = "permissions"
HINTS = "hints"


@dataclass(frozen=True)
class Outcome:
    source_id: str
    status: str  # a run status, or SKIPPED (the lease is held elsewhere)
    run_id: str | None = None
    prune_blocked: bool = False
    error: str | None = None
    kind: str = SYNC


class Feed(Protocol):
    """Where the scheduler reports progress (``cli/progress.Reporter``): a line per run
    (``sync SOURCE``, fed the runner's counts) and ``indexing``, each ended by ``finish``."""

    def start(self, name: str) -> None: ...
    def sync(self, source: str, counts: RunCounts) -> None: ...
    def index(self, progress: IndexProgress) -> None: ...
    def finish(self, name: str) -> None: ...


def exit_code(outcomes: list[Outcome], *, once: bool, interrupted: bool, drain: bool) -> int:
    """``run --once``: 130 Ctrl-C, 1 a run (or the drain into the indexes) failed, 3 a
    prune was blocked, else 0. The long-running scheduler stopped by a signal: 0."""
    if once and interrupted:
        return EXIT_CANCELLED
    if not once:
        return EXIT_OK
    if not drain or any(o.status == FAILED for o in outcomes):
        return EXIT_RUN_FAILED
    if any(o.prune_blocked for o in outcomes):
        return EXIT_NEEDS_PERSON
    return EXIT_OK


def ids(source: str, run_id: str | None = None, status: str | None = None) -> dict[str, str]:
    """The fields a JSON log line (``--log-format json``) carries beside its message."""
    fields = {"source": source, "run_id": run_id, "status": status}
    return {k: v for k, v in fields.items() if v is not None}


def summary(values: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items() if isinstance(v, int | float) and v)
