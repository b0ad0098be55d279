"""What each rebuild operation reports: ``headwater rebuild ... --json`` as typed results.

Every result is a frozen dataclass whose ``as_dict()`` is exactly the JSON its command
prints and ``/v1/rebuilds`` answers. Which keys appear follows from the outcome (an
index that is up to date has no generation; a failed one lists its problems), so a
result never carries a key its outcome does not have. Through ``JsonView`` a result also
reads like that JSON (``report["indexes"]``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from headwater.indexer.report import IndexReport
from headwater.jsonview import JsonView

UP_TO_DATE = "up_to_date"
STOPPED = "stopped"
CANCELLED = "cancelled"
FAILED = "failed"
SWITCHED = "switched"
READY = "ready"


@dataclass(frozen=True, eq=False)
class RebuildEntry(JsonView):
    """One index of ``headwater rebuild``: what became of its generation."""

    index: str
    result: str  # up_to_date, stopped, cancelled, failed, switched or ready
    generation: int | None = None  # None only when up to date
    index_report: IndexReport | None = None
    live: int | None = None  # shown when up to date or cancelled
    problems: tuple[str, ...] = ()  # shown when failed

    def as_dict(self) -> dict[str, Any]:
        """The entry as ``headwater rebuild --json`` prints it."""
        out: dict[str, Any] = {"index": self.index}
        if self.result != UP_TO_DATE:
            out["generation"] = self.generation
            out["index_report"] = (self.index_report or IndexReport()).as_dict()
        out["result"] = self.result
        if self.result in (UP_TO_DATE, CANCELLED):
            out["live"] = self.live
        if self.result == FAILED:
            out["problems"] = list(self.problems)
        return out


@dataclass(frozen=True, eq=False)
class RebuildReport(JsonView):
    """``headwater rebuild [INDEX ...]``: one entry per index, in order."""

    indexes: tuple[RebuildEntry, ...] = ()

    @property
    def failed(self) -> bool:
        """Whether a verification failed or a generation was cancelled meanwhile."""
        return any(e.result in (FAILED, CANCELLED) for e in self.indexes)

    def as_dict(self) -> dict[str, Any]:
        """The report as ``headwater rebuild --json`` prints it."""
        return {"indexes": [e.as_dict() for e in self.indexes]}


@dataclass(frozen=True, eq=False)
class SwitchResult(JsonView):
    """``headwater rebuild switch INDEX``: switched, failed verification, or cancelled."""

    index: str
    generation: int
    result: str  # switched, failed or cancelled
    problems: tuple[str, ...] = ()  # shown when failed
    index_report: IndexReport | None = None  # shown when switched

    def as_dict(self) -> dict[str, Any]:
        """The result as ``headwater rebuild switch --json`` prints it."""
        out: dict[str, Any] = {
            "index": self.index,
            "generation": self.generation,
            "result": self.result,
        }
        if self.result == FAILED:
            out["problems"] = list(self.problems)
        elif self.result == SWITCHED:
            out["index_report"] = (self.index_report or IndexReport()).as_dict()
        return out


@dataclass(frozen=True, eq=False)
class RollbackResult(JsonView):
    """``headwater rebuild rollback INDEX``: the generation live now and what it lacks."""

    index: str
    live: int | None
    stopped: bool = False  # Ctrl-C during the catch-up: nothing was switched
    pending: int = 0
    index_report: IndexReport | None = None  # the catch-up's (none without one)

    def as_dict(self) -> dict[str, Any]:
        """The result as ``headwater rebuild rollback --json`` prints it."""
        if self.stopped:
            return {"index": self.index, "live": self.live, "result": STOPPED}
        out: dict[str, Any] = {"index": self.index, "live": self.live, "pending": self.pending}
        if self.index_report is not None:
            out["index_report"] = self.index_report.as_dict()
        return out


@dataclass(frozen=True, eq=False)
class CancelResult(JsonView):
    """``headwater rebuild cancel INDEX``: the generation retired and dropped."""

    index: str
    cancelled: int

    def as_dict(self) -> dict[str, Any]:
        """The result as ``headwater rebuild cancel --json`` prints it."""
        return {"index": self.index, "cancelled": self.cancelled}


@dataclass(frozen=True, eq=False)
class RetireResult(JsonView):
    """``headwater rebuild retire INDEX``: the generations whose storage was dropped."""

    index: str
    retired: tuple[int, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """The result as ``headwater rebuild retire --json`` prints it."""
        return {"index": self.index, "retired": list(self.retired)}


@dataclass(frozen=True)
class GenerationRow:
    """One generation as ``headwater rebuild status`` lists it."""

    generation: int
    state: str
    index_version: str
    settings: Mapping[str, Any]
    documents: int
    documents_total: int
    chunks: int
    pending: int | None  # for the live generation and those in progress only
    created_at: str | None
    switched_at: str | None
    problems: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """The row as ``headwater rebuild status --json`` prints it."""
        return {
            "generation": self.generation,
            "state": self.state,
            "index_version": self.index_version,
            "settings": dict(self.settings),
            "documents": self.documents,
            "documents_total": self.documents_total,
            "chunks": self.chunks,
            "pending": self.pending,
            "created_at": self.created_at,
            "switched_at": self.switched_at,
            "problems": list(self.problems),
        }


@dataclass(frozen=True)
class IndexGenerations:
    """One index's generations, oldest first, and the number of the live one."""

    name: str
    live: int | None
    generations: tuple[GenerationRow, ...] = field(default_factory=tuple)

    def as_dict(self) -> dict[str, Any]:
        """The index as ``headwater rebuild status --json`` prints it."""
        return {
            "name": self.name,
            "live": self.live,
            "generations": [g.as_dict() for g in self.generations],
        }


@dataclass(frozen=True, eq=False)
class RebuildStatus(JsonView):
    """``headwater rebuild status``: every index's generations with progress counts."""

    indexes: tuple[IndexGenerations, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """The report as ``headwater rebuild status --json`` prints it."""
        return {"indexes": [i.as_dict() for i in self.indexes]}
