"""``GET /metrics``: Prometheus text from the manifest and this process's counters.

Manifest-derived values (documents, pending work, DLQ, failed deletes, runs and their
durations, each source's last success and last status, lease takeovers) are read at
scrape time by a custom collector, so every process and the scheduler report the same
truth. ``headwater_runs_total`` is the manifest's persisted counter (bumped when a run
ends), never a count of the retained history. Search and HTTP latency and embedding
counters are this process's own, and so are the searches running and waiting for a
thread (``headwater_searches_running``, ``headwater_searches_waiting``) and refused webhooks
(``headwater_hooks_rejected_total{source,reason}``). A lease takeover is an acquisition
of a lease its previous holder never released (it expired unrenewed, or the process
died); a normal claim after a release is not one (``manifest/leases.py`` keeps the count
per source). The change-event outbox depth and the hint queue (depth and oldest age per
source) are read from the manifest too.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from fastapi import FastAPI
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from sqlalchemy import func, select
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from headwater.api.search_pool import SearchPool
from headwater.api.service import Service
from headwater.clock import as_utc, utcnow
from headwater.manifest import schema as t
from headwater.manifest.failures import DEAD
from headwater.manifest.liveness import RUNS_TOTAL, key_labels
from headwater.manifest.runs import CANCELLED, COMPLETED_WITH_ERRORS, FAILED, RUNNING, SUCCEEDED

RUN_BUCKETS = (1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0, float("inf"))
RUN_STATUSES = (RUNNING, SUCCEEDED, COMPLETED_WITH_ERRORS, FAILED, CANCELLED)
HTTP_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
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
        yield from self._hints()
        outbox = GaugeMetricFamily(
            "headwater_events_outbox_depth",
            "Change events waiting in the outbox to be sent ([events]; 0 without it)",
        )
        outbox.add_metric([], float(ws.manifest.outbox.depth()))
        yield outbox

    def _hints(self) -> Iterator[Metric]:
        ws = self.service.ws
        depth = GaugeMetricFamily(
            "headwater_hints_queue_depth",
            "Objects with change hints queued for a targeted read (webhooks, watchers)",
            labels=["source"],
        )
        age = GaugeMetricFamily(
            "headwater_hints_oldest_age_seconds",
            "Age of the oldest queued hint's first notification (0 when none is queued)",
            labels=["source"],
        )
        queued, now = ws.manifest.hints.depths(), utcnow()
        for source in sorted({s.id for s in ws.config.source} | set(queued)):
            rows, oldest = queued.get(source, (0, now))
            depth.add_metric([source], float(rows))
            age.add_metric([source], max(0.0, (now - oldest).total_seconds()))
        yield depth
        yield age

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
        ws = self.service.ws
        engine = ws.manifest.engine
        r = t.runs.c
        runs = CounterMetricFamily(
            "headwater_runs",
            "Runs ended, by source and status (persisted: pruning run history never lowers it)",
            labels=["source", "status"],
        )
        for key, value in sorted(ws.manifest.liveness.counter(RUNS_TOTAL).items()):
            source, status = key_labels(key)
            runs.add_metric([source, status], float(value))
        durations = HistogramMetricFamily(
            "headwater_run_duration_seconds",
            "Duration of finished runs in the retained history",
            labels=["source"],
        )
        by_source: dict[str, list[float]] = {}
        with engine.connect() as conn:
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
        yield from self._last_runs()

    def _last_runs(self) -> Iterator[Metric]:
        ws = self.service.ws
        success = GaugeMetricFamily(
            "headwater_source_last_success_timestamp_seconds",
            "When the source's last successful run ended (Unix time)",
            labels=["source"],
        )
        status = GaugeMetricFamily(
            "headwater_source_last_run_status",
            "1 for the status of the source's latest run, 0 for the others",
            labels=["source", "status"],
        )
        for section in ws.config.source:
            ok = ws.manifest.runs.last_successful(section.id)
            if ok is not None and ok.finished_at is not None:
                success.add_metric([section.id], as_utc(ok.finished_at).timestamp())
            latest = ws.manifest.runs.latest(section.id)
            if latest is not None:
                for name in RUN_STATUSES:
                    status.add_metric([section.id, name], 1.0 if latest.status == name else 0.0)
        yield success
        yield status


class SearchPoolCollector(Collector):
    """This process's searches running and waiting their turn (``api/search_pool.py``)."""

    def __init__(self, pool: SearchPool) -> None:
        self.pool = pool

    def collect(self) -> Iterator[Metric]:
        """The two gauges, read now."""
        yield GaugeMetricFamily(
            "headwater_searches_running",
            f"Searches of this process running now (at most [api] search_threads, "
            f"{self.pool.threads}, or 1 when it is 0: on the event loop's thread)",
            value=self.pool.running(),
        )
        yield GaugeMetricFamily(
            "headwater_searches_waiting",
            "Searches of this process waiting for their turn now",
            value=self.pool.waiting(),
        )


class Metrics:
    """The registry of one process: the manifest collector, search and HTTP latency."""

    def __init__(self, service: Service, pool: SearchPool | None = None) -> None:
        self.registry = CollectorRegistry()
        self.registry.register(ManifestCollector(service))
        if pool is not None:
            self.registry.register(SearchPoolCollector(pool))
        self.search_latency = Histogram(
            "headwater_search_latency_seconds",
            "Search latency through the API",
            ["mode"],
            buckets=SEARCH_BUCKETS,
            registry=self.registry,
        )
        self.hooks_rejected = Counter(
            "headwater_hooks_rejected",
            "Webhook deliveries refused by this process (a bad or missing signature)",
            ["source", "reason"],
            registry=self.registry,
        )
        self.http_requests = Counter(
            "headwater_http_requests",
            "HTTP requests answered by this process, by route template, method and status",
            ["route", "method", "status"],
            registry=self.registry,
        )
        self.http_latency = Histogram(
            "headwater_http_request_duration_seconds",
            "HTTP request latency in this process, by route template",
            ["route", "method"],
            buckets=HTTP_BUCKETS,
            registry=self.registry,
        )

    def observe_request(self, route: str, method: str, status: int, seconds: float) -> None:
        """Count one answered request and its latency."""
        self.http_requests.labels(route, method, str(status)).inc()
        self.http_latency.labels(route, method).observe(seconds)

    def render(self) -> bytes:
        """The Prometheus text exposition of every metric."""
        return generate_latest(self.registry)


def install_http_metrics(app: FastAPI) -> None:
    """Time every request; the route label is the matched path template (``/v1/search``,
    ``/admin/runs/{run_id}``), so ids never become label values; else ``unmatched``."""
    app.add_middleware(HttpMetrics)


class HttpMetrics:
    """A plain ASGI middleware counting each request and timing it to its response start.

    Plain ASGI, not ``@app.middleware("http")``: Starlette's ``BaseHTTPMiddleware`` runs
    every request in a task of its own with a memory stream for the body, a cost paid by
    each search (docs/performance.md, "API under load"). The route is read from the
    scope after the app has matched it (Starlette's router sets ``scope["route"]``); a
    request that fails before its response starts counts as a 500."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        observed = False

        def observe(status: int) -> None:
            nonlocal observed
            observed = True
            metrics: Metrics | None = getattr(scope["app"].state, "metrics", None)
            if metrics is not None:
                route = getattr(scope.get("route"), "path", None) or "unmatched"
                metrics.observe_request(route, scope["method"], status, time.perf_counter() - start)

        async def timed_send(message: Message) -> None:
            if message["type"] == "http.response.start" and not observed:
                observe(int(message["status"]))
            await send(message)

        try:
            await self.app(scope, receive, timed_send)
        finally:
            if not observed:
                observe(500)
