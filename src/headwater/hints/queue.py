"""Queueing hints and reading them: the only two things a hint can cause.

``queue`` drops the ids the source's config does not select (counted in
``hint_sources.dropped``) and writes the rest to the manifest's hint queue, durably,
merged per object with a debounce (``DEBOUNCE``, never more than ``MAX_WAIT`` after the
first hint of a burst). ``read_due`` takes a source's due hints and reads them: with the
connector's ``refetch`` (a targeted read: exactly those objects, through the sync's
gates, batch commit and lease fencing), or, for a scope hint or a connector that cannot
refetch, with an ordinary sync of the source. The hints are removed once that read
committed; a read that could not run (the source's lease is held by a sync, the source
is unreachable) leaves them queued for a later try. Periodic scans stay: a lost hint
costs latency, never correctness.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from headwater.connectors.base import Refetching, Scoped
from headwater.errors import HeadwaterError, SourceBusy
from headwater.executor.local import LocalExecutor
from headwater.manifest.hints import CHANGED, SCOPE, Hint
from headwater.runtime import Runtime
from headwater.runtime.sources import close_connector
from headwater.sync.targeted import TargetedRead

log = logging.getLogger("headwater.hints")

DEBOUNCE = timedelta(seconds=1)  # a hint waits this long for more of its burst
MAX_WAIT = timedelta(seconds=10)  # ... but a steady stream is read at least this often
BUSY_RETRY = timedelta(seconds=2)  # the source's lease is held: try again soon
ERROR_RETRY = timedelta(seconds=30)  # the read failed: try again later


@dataclass
class HintRead:
    """What reading one source's due hints did."""

    source: str
    hints: int
    mode: str  # "targeted" (refetch), "scan" (a sync), "busy" or "failed" (left queued)
    dropped: int = 0
    changed: bool = False  # new revisions wait for the indexer
    counts: dict[str, int] | None = None
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The read as a JSON-ready dict."""
        return {
            "source": self.source,
            "hints": self.hints,
            "mode": self.mode,
            "dropped": self.dropped,
            "counts": self.counts,
            "error": self.error,
        }


def queue(
    rt: Runtime,
    source_id: str,
    object_ids: Sequence[str] = (),
    *,
    kind: str = CHANGED,
    origin: str,
    scope: bool = False,
    debounce: timedelta = DEBOUNCE,
) -> int:
    """Queue hints for ``object_ids`` (or, with ``scope``, the whole source); the number
    queued. Ids the source's config does not select are dropped and counted."""
    rt.sources.section(source_id)  # an unknown source is a ConfigError naming the known
    hints = rt.manifest.hints
    if scope:
        return hints.add(source_id, [""], kind=SCOPE, origin=origin, debounce=debounce,
                         max_wait=MAX_WAIT)  # fmt: skip
    wanted = [i for i in dict.fromkeys(object_ids) if i]
    connector = rt.sources.connector(source_id)
    try:
        if isinstance(connector, Scoped):
            wanted = [i for i in wanted if connector.in_scope(i)]
    finally:
        close_connector(connector)
    dropped = len([i for i in dict.fromkeys(object_ids) if i]) - len(wanted)
    if dropped:
        hints.drop(source_id, dropped)
        log.info("dropped %d hint(s) for %s: outside its scope", dropped, source_id)
    if not wanted:
        return 0
    return hints.add(source_id, wanted, kind=kind, origin=origin, debounce=debounce,
                     max_wait=MAX_WAIT)  # fmt: skip


def read_due(rt: Runtime, source_id: str) -> HintRead | None:
    """Read the due hints of ``source_id``; None when none is due."""
    due = rt.manifest.hints.due(source_id)
    if not due:
        return None
    section = rt.sources.section(source_id)
    connector = rt.sources.connector(source_id)
    scan = any(h.kind == SCOPE for h in due) or not isinstance(connector, Refetching)
    try:
        if scan:
            close_connector(connector)
            return _scan(rt, source_id, due)
        reader = TargetedRead(
            rt.manifest,
            rt.content_store,
            rt.sources.identity(section),
            rt.sources.settings(section),
            connector,
        )
        report = reader.run([h.object_id for h in due], rt.config.sync.lease_seconds)
    except SourceBusy as exc:
        _later(rt, source_id, due, BUSY_RETRY)
        return HintRead(source_id, len(due), "busy", error=str(exc))
    except HeadwaterError as exc:
        log.error("targeted read of %s failed; its hints stay queued: %s", source_id, exc)
        _later(rt, source_id, due, ERROR_RETRY)
        return HintRead(source_id, len(due), "failed", error=str(exc))
    except Exception as exc:  # the connector raised: its hints wait, the scans go on
        log.exception("targeted read of %s raised; its hints stay queued", source_id)
        _later(rt, source_id, due, ERROR_RETRY)
        return HintRead(source_id, len(due), "failed", error=f"{type(exc).__name__}: {exc}")
    finally:
        close_connector(connector)
    rt.manifest.hints.done(source_id, due, dropped=report.dropped)
    return HintRead(source_id, len(due), "targeted", report.dropped, report.changed_anything,
                    report.counts.as_dict())  # fmt: skip


def _scan(rt: Runtime, source_id: str, due: list[Hint]) -> HintRead:
    """A scope hint (or a connector without ``refetch``): an ordinary sync of the source."""
    result = LocalExecutor(rt).sync([source_id], index=False, skip_busy=True)
    if result.skipped or not result.runs:
        _later(rt, source_id, due, BUSY_RETRY)
        return HintRead(source_id, len(due), "busy")
    run = result.runs[0]
    if run.status == "failed":
        _later(rt, source_id, due, ERROR_RETRY)
        return HintRead(source_id, len(due), "failed", error=run.error)
    rt.manifest.hints.done(source_id, due)
    changed = bool(run.counts.new + run.counts.changed + run.counts.deleted)
    return HintRead(source_id, len(due), "scan", 0, changed, run.counts.as_dict())


def _later(rt: Runtime, source_id: str, due: list[Hint], wait: timedelta) -> None:
    rt.manifest.hints.postpone(source_id, due, wait)
