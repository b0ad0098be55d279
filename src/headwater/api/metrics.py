"""``GET /metrics``: Prometheus text from the manifest and this process's counters.

Manifest-derived values (documents, pending work, DLQ, failed deletes, runs and their
durations, lease takeovers, the change-event outbox) are read at scrape time by a custom
collector, so every process and the scheduler report the same truth. Search latency and
embedding counters are this process's own. A lease takeover is an acquisition of a lease
its previous holder never released (it expired unrenewed, or the process died); a normal
claim after a release is not one (``manifest/leases.py`` keeps the count per source).
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from sqlalchemy import func, select

from headwater.api.service import Service
from headwater.clock import as_utc, utcnow
from headwater.manifest import schema as t
from headwater.manifest.failures import DEAD

RUN_BUCKETS = (1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0, float("inf"))
SEARCH_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


class ManifestCollector(Collector):
    """Prometheus gauges read from the manifest at scrape time."""

    def __init__(self, service: Service) -> None:
        self.service = service

    def collect(self) -> Iterator[Metric]:
        """The manifest-backed metrics, read now."""
        ws = self.service.ws
        docs = GaugeMetricFamily(
            "headwater_documents", "Documents in the manifest", labels=["source", "state"]
        )
        for section in ws.config.source:
            for state in ("active", "deleted"):
                docs.add_metric([section.id, state], ws.manifest.count_documents(section.id, state))
        yield docs
        pending = GaugeMetricFamily(
            "headwater_index_pending",
            "Documents waiting for a generation of an index (live and building ones)",
            labels=["index", "generation"],
        )
        for s in ws.index_sections:
            # Each generation is kept with its own recorded settings, so its pending work is
            # counted against its own version, not the config's (a changed config that no
            # rebuild has built in yet leaves the live generation current, not all pending).
            for g in ws.manifest.generations.writable(s.name):
                count = ws.manifest.index_state.pending_count(g.key, ws.pipelines.version(g))
                pending.add_metric([s.name, str(g.generation)], count)
        yield pending
        yield from self._dlq()
        yield from self._runs()
        takeovers = CounterMetricFamily(
            "headwater_lease_takeovers",
            "Leases taken over after their holder let them expire unreleased (or died)",
            labels=["source"],
        )
        counted = ws.manifest.runs.leases.takeovers()
        for source in sorted({s.id for s in ws.config.source} | set(counted)):
            takeovers.add_metric([source], float(counted.get(source, 0)))
        yield takeovers
        ws_embedder = ws.runtime.loaded_embedder()
        embedded = CounterMetricFamily(
            "headwater_chunks_embedded", "Chunks embedded by this process (cache misses)"
        )
        embedded.add_metric([], float(getattr(ws_embedder, "embedded", 0) or 0))
        yield embedded
        hits = CounterMetricFamily(
            "headwater_embedding_cache_hits", "Chunk embeddings served from the cache"
        )
        hits.add_metric([], float(getattr(ws_embedder, "hits", 0) or 0))
        yield hits
        outbox = GaugeMetricFamily(
            "headwater_events_outbox_depth",
            "Change events waiting in the outbox to be sent ([events]; 0 without it)",
        )
        outbox.add_metric([], float(ws.manifest.outbox.depth()))
        yield outbox

    def _dlq(self) -> Iterator[Metric]:
        engine = self.service.ws.manifest.engine
        f = t.failures.c
        depth = GaugeMetricFamily("headwater_dlq_depth", "Dead-lettered entries", labels=["kind"])
        age = GaugeMetricFamily(
            "headwater_dlq_oldest_age_seconds", "Age of the oldest DLQ entry", labels=["kind"]
        )
        failed = GaugeMetricFamily(
            "headwater_failed_deletes", "Open failures of delete stages (chunks may linger)"
        )
        now = utcnow()
        with engine.connect() as conn:
            for kind, cond in (
                ("delete", f.stage.like("delete%")),
                ("document", ~f.stage.like("delete%")),
            ):
                count, oldest = conn.execute(
                    select(func.count(), func.min(f.first_failed_at)).where(f.status == DEAD, cond)
                ).one()
                depth.add_metric([kind], int(count))
                seconds = (now - as_utc(oldest)).total_seconds() if oldest is not None else 0.0
                age.add_metric([kind], seconds)
        deletes = self.service.ws.manifest.failures.counts()["deletes"]
        failed.add_metric([], float(deletes if isinstance(deletes, int) else 0))
        yield depth
        yield age
        yield failed

    def _runs(self) -> Iterator[Metric]:
        engine = self.service.ws.manifest.engine
        r = t.runs.c
        runs = CounterMetricFamily(
            "headwater_runs", "Runs recorded, by source and status", labels=["source", "status"]
        )
        durations = HistogramMetricFamily(
            "headwater_run_duration_seconds", "Duration of finished runs", labels=["source"]
        )
        by_source: dict[str, list[float]] = {}
        with engine.connect() as conn:
            for source, status, count in conn.execute(
                select(r.source_id, r.status, func.count()).group_by(r.source_id, r.status)
            ):
                runs.add_metric([source, status], int(count))
            for source, duration in conn.execute(
                select(r.source_id, r.duration_s).where(r.finished_at.is_not(None))
            ):
                by_source.setdefault(source, []).append(float(duration or 0.0))
        for source, values in by_source.items():
            buckets = [
                (str(b) if b != float("inf") else "+Inf", sum(1 for v in values if v <= b))
                for b in RUN_BUCKETS
            ]
            durations.add_metric([source], buckets, sum(values))
        yield runs
        yield durations


class Metrics:
    """The registry of one process: the manifest collector plus search latency."""

    def __init__(self, service: Service) -> None:
        self.registry = CollectorRegistry()
        self.registry.register(ManifestCollector(service))
        self.search_latency = Histogram(
            "headwater_search_latency_seconds",
            "Search latency through the API",
            ["mode"],
            buckets=SEARCH_BUCKETS,
            registry=self.registry,
        )

    def render(self) -> bytes:
        """The Prometheus text exposition of every metric."""
        return generate_latest(self.registry)
