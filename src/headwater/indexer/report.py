"""What an index pass reports: the shape of ``headwater index --json``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class IndexProgress:
    """Where a drain stands: documents of the pending set done, chunks written so far."""

    documents_done: int
    documents_total: int
    chunks: int


@dataclass(frozen=True)
class LeftToRebuild:
    """A generation a sync did not drain: it is being built by a rebuild, which (or the
    scheduler's catch-up, or ``headwater index``) indexes its ``pending`` documents."""

    index: str
    generation: int
    pending: int

    def as_dict(self) -> dict[str, Any]:
        """``{"index", "generation", "pending"}``."""
        return {"index": self.index, "generation": self.generation, "pending": self.pending}


@dataclass
class IndexReport:
    """What one indexing pass did: documents replaced, deleted, ACL-updated and failed."""

    replaced: int = 0
    deleted: int = 0
    acl_updates: int = 0
    failed: int = 0
    chunks: int = 0
    embedded: int = 0
    cache_hits: int = 0
    duration_s: float = 0.0
    # generations left to their rebuild (a sync's report only; None elsewhere)
    left_to_rebuild: list[LeftToRebuild] | None = None

    def add(self, other: IndexReport) -> None:
        """Add ``other``'s counts to this report's."""
        for name in (
            "replaced",
            "deleted",
            "acl_updates",
            "failed",
            "chunks",
            "embedded",
            "cache_hits",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.duration_s += other.duration_s
        if other.left_to_rebuild is not None:
            self.left_to_rebuild = [*(self.left_to_rebuild or []), *other.left_to_rebuild]

    def as_dict(self) -> dict[str, Any]:
        """The report as a JSON-ready dict."""
        out: dict[str, Any] = {
            "documents": {
                "replaced": self.replaced,
                "deleted": self.deleted,
                "acl_updates": self.acl_updates,
                "failed": self.failed,
            },
            "chunks": {
                "written": self.chunks,
                "embedded": self.embedded,
                "cache_hits": self.cache_hits,
            },
            "duration_s": round(self.duration_s, 3),
        }
        if self.left_to_rebuild is not None:
            out["left_to_rebuild"] = [left.as_dict() for left in self.left_to_rebuild]
        return out
