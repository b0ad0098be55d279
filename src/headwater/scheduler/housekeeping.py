"""Housekeeping: the retention and garbage steps ``headwater run`` does every ten minutes.

One function, ``housekeep``, so the scheduler and the ``headwater housekeeping`` command
do exactly the same steps: tombstones past ``[sync] tombstone_retention_days`` are
purged, run history older than ``[scheduler] keep_runs_for`` is dropped, and stored
content no active document points at (older than an hour) is deleted from the content
store (see ``manifest/garbage.py``), and the embedding cache is trimmed to ``[embedder]
cache_max_bytes`` by evicting its least recently used vectors (see
``pipeline/embed/cache.py``). Its report is one log line and one JSON object.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from headwater.clock import utcnow
from headwater.errors import HeadwaterError
from headwater.jsonview import JsonView
from headwater.manifest.garbage import GarbageReport, collect_garbage
from headwater.manifest.schedule import ScheduleStore
from headwater.pipeline.embed.cache import CACHE_FILE, CacheTrim, EmbeddingCache
from headwater.runtime import Runtime
from headwater.units import parse_duration


@dataclass(frozen=True, eq=False)
class HousekeepingReport(JsonView):
    """What one housekeeping round removed."""

    tombstones: int = 0
    runs: int = 0
    content: GarbageReport = field(default_factory=GarbageReport)
    cache: CacheTrim | None = None  # None: no embedding cache in the state dir yet

    def as_dict(self) -> dict[str, Any]:
        """The JSON ``headwater housekeeping --json`` prints."""
        return {
            "tombstones": self.tombstones,
            "runs": self.runs,
            "content": self.content.as_dict(),
            "embedding_cache": None if self.cache is None else self.cache.as_dict(),
        }

    def summary(self) -> str:
        """The housekeeping log line's text."""
        content = self.content
        return (
            f"{self.tombstones} tombstones and {self.runs} old runs dropped; content store: "
            f"{content.removed} unreferenced objects ({_size(content.removed_bytes)}) removed "
            f"of {content.scanned}, {content.kept_young} younger than an hour kept"
            + ("" if self.cache is None else f"; embedding cache: {_cache(self.cache)}")
        )


def housekeep(rt: Runtime, now: datetime | None = None) -> HousekeepingReport:
    """Run every housekeeping step once; a step's database error propagates."""
    now = now or utcnow()
    keep = parse_duration(rt.config.scheduler.keep_runs_for)
    assert keep is not None  # validated with the config
    tombstones = rt.manifest.purge_tombstones(rt.config.sync.tombstone_retention_days)
    runs = ScheduleStore(rt.manifest.engine).purge_runs(now - keep)
    content = collect_garbage(rt.manifest.engine, rt.content_store, now=now)
    return HousekeepingReport(len(tombstones), runs, content, trim_cache(rt))


def housekeep_logged(rt: Runtime, now: datetime, log: logging.Logger) -> None:
    """The scheduler's round: one log line; a failed step is logged and retried next time."""
    try:
        report = housekeep(rt, now)
    except (HeadwaterError, OSError) as exc:
        log.error("housekeeping failed (retried in 10 minutes): %s", exc)
        return
    log.info("housekeeping: %s", report.summary())


def trim_cache(rt: Runtime) -> CacheTrim | None:
    """Evict least recently used embeddings above ``[embedder] cache_max_bytes``."""
    path = rt.state_dir / CACHE_FILE
    if not path.exists():
        return None
    with EmbeddingCache(path) as cache:
        return cache.trim(rt.config.embedder.cache_max_bytes)


def _cache(trim: CacheTrim) -> str:
    cap = "no cap" if trim.max_bytes is None else f"cap {_size(trim.max_bytes)}"
    return (
        f"{trim.evicted} least recently used entries ({_size(trim.evicted_bytes)}) evicted, "
        f"{trim.entries} ({_size(trim.bytes)}) kept, {cap}"
    )


def _size(count: int) -> str:
    value = float(count)
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")
