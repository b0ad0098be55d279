"""What one scheduled run came back as, and the fields of the scheduler's log lines."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from headwater.scheduler.due import SYNC

SKIPPED = "skipped"
PERMISSIONS = "permissions"


@dataclass(frozen=True)
class Outcome:
    source_id: str
    status: str  # a run status, or SKIPPED (the lease is held elsewhere)
    run_id: str | None = None
    prune_blocked: bool = False
    error: str | None = None
    kind: str = SYNC


def ids(source: str, run_id: str | None = None, status: str | None = None) -> dict[str, str]:
    """The fields a JSON log line (``--log-format json``) carries beside its message."""
    fields = {"source": source, "run_id": run_id, "status": status}
    return {k: v for k, v in fields.items() if v is not None}


def summary(values: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items() if isinstance(v, int | float) and v)
