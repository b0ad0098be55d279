"""A sync's result: each source's run, the indexing that followed, warnings and busy sources.

``SyncResult`` is what ``Workspace.sync`` returns and ``headwater sync --json`` prints; an
executor (local or Celery) fills it from the runs it carried out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from headwater.indexer.report import IndexReport
from headwater.sync.report import RunReport, SkippedRun


@dataclass
class SyncResult:
    """What a sync did: each source's run, the indexing, warnings and busy sources."""

    runs: list[RunReport] = field(default_factory=list)
    index: IndexReport = field(default_factory=IndexReport)
    warnings: list[str] = field(default_factory=list)
    duration_s: float = 0.0  # the whole sync's wall time; index.duration_s is indexing's
    skipped: list[SkippedRun] = field(default_factory=list)  # busy: another process's

    def as_dict(self) -> dict[str, Any]:
        """The JSON the command prints."""
        return {
            "runs": [r.as_dict() for r in self.runs],
            "skipped": [s.as_dict() for s in self.skipped],
            "index": self.index.as_dict(),
            "warnings": list(self.warnings),
            "duration_s": round(self.duration_s, 3),
        }

    @property
    def failed(self) -> bool:
        """Whether a run failed."""
        return any(r.status == "failed" for r in self.runs)
