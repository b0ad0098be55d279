"""What a run reports: the shape of ``headwater sync --json``; and the record of a run that
could not start."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from headwater.clock import as_utc, iso, utcnow
from headwater.jsonview import JsonView
from headwater.manifest.records import RunCounts, RunRecord
from headwater.manifest.runs import FAILED, RUNNING
from headwater.manifest.store import Manifest


@dataclass(frozen=True)
class PruneReport:
    """Deletes by set difference: done, blocked by the safety fraction, or unsupported."""

    status: str
    candidates: int = 0
    active: int = 0
    fraction: float = 0.0
    max_fraction: float = 0.0
    deleted: int = 0
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The report as a JSON-ready dict."""
        extra = {"error": self.error} if self.error else {}
        return {
            **extra,
            "status": self.status,
            "candidates": self.candidates,
            "active": self.active,
            "fraction": round(self.fraction, 4),
            "max_fraction": self.max_fraction,
            "deleted": self.deleted,
        }


@dataclass(frozen=True, eq=False)
class PruneResult(JsonView):
    """``headwater prune`` for one source; ``would_delete`` lists a dry run's first ones."""

    source: str
    report: PruneReport
    would_delete: tuple[str, ...] | None = None

    def as_dict(self) -> dict[str, Any]:
        """The result as a JSON-ready dict."""
        listed = {} if self.would_delete is None else {"would_delete": list(self.would_delete)}
        return {"source": self.source, **self.report.as_dict(), **listed}


def eta_seconds(seen: int, expected: int, elapsed_s: float) -> float | None:
    """Seconds left at the rate so far to reach ``expected`` items (None before the first
    item: no rate yet; 0 once ``seen`` reached it).

    >>> eta_seconds(250, 1000, 10.0)
    30.0
    """
    if seen >= expected:
        return 0.0
    if seen <= 0 or elapsed_s <= 0:
        return None
    return round((expected - seen) * elapsed_s / seen, 1)


@dataclass(frozen=True)
class RunReport:
    """One source run as reported: its status, window, counts and prune."""

    run_id: str
    source: str
    source_type: str
    status: str
    window_start: str | None
    window_end: str | None
    counts: RunCounts
    duration_s: float
    error: str | None
    prune: dict[str, Any] | None
    resumed: bool
    fetched: int | None = None
    expected: int | None = None  # a running sync's listing total, when the API gave one
    eta_s: float | None = None  # from ``expected`` at the rate so far (running only)

    @classmethod
    def from_record(
        cls,
        record: RunRecord,
        source_type: str,
        *,
        resumed: bool = False,
        fetched: int | None = None,
    ) -> RunReport:
        """The report of the recorded run ``record`` (with its ETA while it runs and its
        source's API gave a total)."""
        expected = record.counts.expected if record.status == RUNNING else None
        eta = None
        if expected is not None:
            elapsed = (utcnow() - as_utc(record.started_at)).total_seconds()
            eta = eta_seconds(record.counts.seen, expected, elapsed)
        return cls(
            run_id=record.run_id,
            source=record.source_id,
            source_type=source_type,
            status=record.status,
            window_start=iso(record.window_start),
            window_end=iso(record.window_end),
            counts=record.counts,
            duration_s=round(record.duration_s, 3),
            error=record.error,
            prune=record.prune,
            resumed=resumed or record.attempts > 1,
            fetched=fetched,
            expected=expected,
            eta_s=eta,
        )

    @property
    def note(self) -> str | None:
        """What a person may want to know about a run that did not fail: its listing
        stopped at a configured cap (``max_pages``), so it deleted nothing."""
        if self.prune and self.prune.get("status") == "capped":
            return str(self.prune.get("error") or "the listing stopped at a configured cap")
        return None

    @property
    def prune_blocked(self) -> dict[str, Any] | None:
        """The blocked prune's figures, or None when the prune was not blocked."""
        if self.prune and self.prune.get("status") == "blocked":
            return {k: v for k, v in self.prune.items() if k != "status"}
        return None

    def as_dict(self) -> dict[str, Any]:
        """The report as a JSON-ready dict."""
        data: dict[str, Any] = {
            "run_id": self.run_id,
            "source": self.source,
            "status": self.status,
            "window": {"start": self.window_start, "end": self.window_end},
            "counts": self.counts.as_dict(),
            "duration_s": self.duration_s,
        }
        if self.error:
            data["error"] = self.error
        if self.fetched is not None:
            data["fetched"] = self.fetched
        if self.expected is not None:
            data["expected"] = self.expected
            data["eta_s"] = self.eta_s
        if self.prune is not None and self.prune.get("status") in (
            "unsupported",
            "enumeration_failed",
            "capped",
        ):
            data["deletes"] = self.prune["status"]
        if self.note:
            data["note"] = self.note
        if self.prune_blocked is not None:
            data["prune_blocked"] = self.prune_blocked
        if self.resumed:
            data["resumed"] = True
        return data


@dataclass(frozen=True)
class SkippedRun:
    """A source ``sync`` did not run: another live process held its lease (``busy``)."""

    source: str
    source_type: str
    holder: str
    until: str | None
    reason: str = "busy"

    def as_dict(self) -> dict[str, Any]:
        """The skipped run as a JSON-ready dict."""
        return {
            "source": self.source,
            "reason": self.reason,
            "holder": self.holder,
            "until": self.until,
        }


def record_unstarted_run(
    manifest: Manifest, source_id: str, source_type: str, error: str
) -> RunReport:
    """Record a run that could not start (an index could not be opened) as ``failed``.

    Nothing was read, so nothing is certified: the next run covers the same window. A run
    left interrupted is closed with the error instead of being hidden by a new one.
    """
    runs = manifest.runs
    manifest.ensure_source(source_id, source_type)
    interrupted = runs.interrupted(source_id)
    if interrupted is not None:
        run_id, counts = interrupted.run_id, interrupted.counts
    else:
        last = runs.last_successful(source_id)
        start = as_utc(last.window_end) if last else None
        run_id, counts = runs.start(source_id, start, utcnow()), RunCounts()
    runs.finish(run_id, FAILED, counts, 0.0, error=error)
    record = runs.get(run_id)
    assert record is not None
    return RunReport.from_record(record, source_type)
