"""Redrive: give dead-lettered documents fresh attempts through the normal pipeline.

Index-stage entries (chunk, embed, index, delete) are re-applied from the manifest's
stored content; source-stage entries (enumerate, fetch, parse) re-sync their source, in
which the reopened entry no longer blocks the version gate. ``rate`` spaces entries out.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from headwater.errors import ConfigError, NotFoundError
from headwater.jsonview import JsonView
from headwater.manifest.failures import DEAD, RESOLVED, FailureLedger
from headwater.manifest.records import SOURCE_STAGES

UNREADABLE = "a sync cannot read its source again (a push source, or one no longer configured)"


@dataclass(frozen=True)
class Skipped:
    """A dead entry ``--all``/``--stage`` left dead, and why."""

    entry_id: int
    source: str
    stage: str
    object_id: str
    reason: str = UNREADABLE

    def as_dict(self) -> dict[str, Any]:
        """The skipped entry as a JSON-ready dict."""
        return {
            "id": self.entry_id,
            "source": self.source,
            "stage": self.stage,
            "object_id": self.object_id,
            "reason": self.reason,
        }


@dataclass(frozen=True, eq=False)
class RedriveReport(JsonView):
    """What a redrive did: entries retried, resolved, and skipped."""

    redriven: int
    resolved: int
    skipped: tuple[Skipped, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """The report as a JSON-ready dict."""
        data: dict[str, Any] = {
            "redriven": self.redriven,
            "resolved": self.resolved,
            "still_failing": self.redriven - self.resolved,
        }
        if self.skipped:
            data["skipped"] = [s.as_dict() for s in self.skipped]
        return data


def redrive(
    failures: FailureLedger,
    entry_ids: Sequence[int],
    *,
    resync: Callable[[list[str]], object],
    reindex: Callable[[list[str]], object],
    all_entries: bool = False,
    stage: str | None = None,
    rate: float = 0.0,
    rereadable: Callable[[str], bool] = lambda _source: True,
) -> RedriveReport:
    """Reopen the entries, then ``resync(source_ids)`` for source-stage ones and
    ``reindex(document_ids)`` for index-stage ones.

    A source-stage entry of a source a sync cannot read again (``rereadable`` false: a
    push source, or one no longer configured) stays dead: reopened, nothing would ever
    retry it. Named by id it is a ConfigError; ``all_entries``/``stage`` leave it out
    and the report names it (``skipped``).
    """
    if all_entries or stage:
        listed = failures.list(stage=stage, statuses=(DEAD,), limit=100_000)
        entries = [e for e in listed if e.stage not in SOURCE_STAGES or rereadable(e.source_id)]
        kept = {e.entry_id for e in entries}
        skipped = tuple(
            Skipped(e.entry_id, e.source_id, e.stage, e.object_id)
            for e in listed
            if e.entry_id not in kept
        )
    else:
        entries, skipped = [], ()
        for entry_id in entry_ids:
            entry = failures.get(entry_id)
            if entry is None:
                raise NotFoundError(
                    f"no DLQ entry #{entry_id}; list them with `headwater dlq list`."
                )
            if entry.stage in SOURCE_STAGES and not rereadable(entry.source_id):
                raise ConfigError(
                    f"DLQ entry #{entry_id} ({entry.stage} of {entry.object_id!r}) is from "
                    f"source {entry.source_id!r}, which a sync cannot read again (a push "
                    "source, or one no longer configured); push the document again at a "
                    "higher version, or drop the entry."
                )
            entries.append(entry)
    failures.reopen([e.entry_id for e in entries])
    index_docs: list[str] = []
    sources: list[str] = []
    for n, entry in enumerate(entries):
        if rate > 0 and n:
            time.sleep(1.0 / rate)
        if entry.stage in SOURCE_STAGES:
            if entry.source_id not in sources:
                sources.append(entry.source_id)
        else:
            index_docs.append(entry.document_id)
    if sources:
        resync(sources)
    if index_docs:
        reindex(index_docs)
    after = [failures.get(e.entry_id) for e in entries]
    resolved = sum(1 for e in after if e is None or e.status == RESOLVED)
    return RedriveReport(redriven=len(entries), resolved=resolved, skipped=skipped)
