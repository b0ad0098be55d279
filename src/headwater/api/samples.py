"""What one server samples for the admin charts: indexing rate, backlog, search latency.

The manifest keeps no history of these three, so the server keeps a short one in memory:
every ``[api] chart_sample_every`` a thread records, per index, the documents pending
(live and building generations, as ``headwater_index_pending``) and the chunks written
since the previous sample (``document_indexes`` rows applied in that interval, whichever
process wrote them: ``sync``, the scheduler, a worker, this server), and the median and
95th percentile of the searches this process answered in the interval. The last
``SAMPLES_KEPT`` samples are kept (two hours at the default 30 s); a restart starts
empty. Each ``serve --workers`` process samples on its own.
"""

from __future__ import annotations

import logging
import statistics
import threading
import time
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import func, select
from sqlalchemy.exc import SQLAlchemyError

from headwater.manifest import schema as t
from headwater.workspace import Workspace

log = logging.getLogger(__name__)

SAMPLES_KEPT = 240
SEARCHES_KEPT = 10_000  # latencies waiting for the next sample (a flood is cut, not stored)


@dataclass(frozen=True)
class Sample:
    """One moment: per index its pending documents and chunks written per minute since
    the previous sample; the searches answered in the interval and their latency."""

    at: float  # Unix seconds
    pending: dict[str, int]
    chunks_per_minute: dict[str, float]
    searches: int
    search_p50_ms: float | None
    search_p95_ms: float | None


def _percentile(values: list[float], share: float) -> float:
    """The ``share`` quantile of ``values`` (nearest rank; at least one value)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered)) - 1))]


class Sampler:
    """A ring of ``Sample``; ``start`` samples every ``every_s`` seconds on a thread."""

    def __init__(self, every_s: float, kept: int = SAMPLES_KEPT) -> None:
        self.every_s = every_s
        self._samples: deque[Sample] = deque(maxlen=kept)
        self._searches: deque[float] = deque(maxlen=SEARCHES_KEPT)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._since = time.time() - every_s  # the first sample covers one interval back

    def searched(self, seconds: float) -> None:
        """Note one answered search and how long it took."""
        with self._lock:
            self._searches.append(seconds)

    def samples(self) -> list[Sample]:
        """The kept samples, oldest first."""
        with self._lock:
            return list(self._samples)

    def sample(self, ws: Workspace) -> Sample:
        """Take one sample now (and keep it)."""
        now = time.time()
        pending: dict[str, int] = {}
        index_of: dict[str, str] = {}  # generation key -> index name
        for section in ws.index_sections:
            pending[section.name] = 0
            for g in ws.manifest.generations.writable(section.name):
                index_of[g.key] = section.name
                count = ws.manifest.index_state.pending_count(g.key, ws.pipelines.version(g))
                pending[section.name] += count
        written = dict.fromkeys(pending, 0)
        di = t.document_indexes.c
        since = datetime.fromtimestamp(self._since, UTC)
        with ws.manifest.engine.connect() as conn:
            rows = conn.execute(
                select(di.index_name, func.coalesce(func.sum(di.chunks), 0))
                .where(di.applied_at > since)
                .group_by(di.index_name)
            ).all()
        for key, chunks in rows:
            if str(key) in index_of:
                written[index_of[str(key)]] += int(chunks)
        minutes = max(now - self._since, 1e-3) / 60
        with self._lock:
            latencies = [1000 * s for s in self._searches]
            self._searches.clear()
        taken = Sample(
            at=now,
            pending=pending,
            chunks_per_minute={name: n / minutes for name, n in written.items()},
            searches=len(latencies),
            search_p50_ms=statistics.median(latencies) if latencies else None,
            search_p95_ms=_percentile(latencies, 0.95) if latencies else None,
        )
        self._since = now
        with self._lock:
            self._samples.append(taken)
        return taken

    def start(self, ws: Workspace) -> Sampler:
        """Sample now and then every ``every_s`` seconds until ``stop``."""

        def loop() -> None:
            while True:
                try:
                    self.sample(ws)
                except (SQLAlchemyError, OSError) as exc:  # a manifest away: try next time
                    log.warning("could not sample the charts' figures: %s", exc)
                if self._stop.wait(self.every_s):
                    return

        self._thread = threading.Thread(target=loop, name="headwater-chart-sampler", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop sampling (waits for a sample in progress)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
