"""The long-lived state of one ``headwater serve`` process around its Workspace.

One Workspace (so one embedding model) per process. Searches run concurrently; index
drains run one at a time in a debounced background thread (woken after every push commit
and after each sync job); sync jobs run in their own threads, one per source at a time,
and only write the manifest (``index=False``) so a long sync never blocks a search. A
rebuild runs as one job at a time in its own thread, holding the index lock (the drains
wait for it, as they wait for a redrive). With ``[events]``, a pump thread sends the
change events of the outbox every second (``headwater.events``).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from headwater.connectors import ConnectorClass
from headwater.connectors.push import PushConnector
from headwater.events import EventPump
from headwater.indexer.report import IndexReport
from headwater.rebuilds.results import RebuildReport
from headwater.workspace import Workspace

log = logging.getLogger(__name__)

CONNECTOR_TYPES: dict[str, ConnectorClass] = {"push": PushConnector}
DEBOUNCE_S = 0.2


def open_workspace(path: str | Path) -> Workspace:
    """The Workspace with the ``push`` type known even before the entry point is installed."""
    return Workspace.open(path, connector_types=CONNECTOR_TYPES)


@dataclass
class Job:
    """A sync started by ``POST /v1/sources/{id}/sync``: its source, status and run."""

    job_id: str
    source: str
    status: str = "queued"  # queued, running, done, failed
    run_id: str | None = None
    error: str | None = None
    started_at: float = field(default_factory=time.time)

    def as_dict(self) -> dict[str, Any]:
        """The job as ``/v1/jobs/{id}`` answers it."""
        return {
            "job_id": self.job_id,
            "source": self.source,
            "status": self.status,
            "run_id": self.run_id,
            "error": self.error,
        }


@dataclass
class RebuildJob:
    """A rebuild run by ``POST /v1/rebuilds`` or ``/v1/rebuilds/jobs``: its options, and
    its report once done (``failure``: the exception a failed one raised)."""

    job_id: str
    indexes: list[str] | None
    force: bool
    switch: bool
    status: str = "queued"  # queued, running, done, failed
    report: RebuildReport | None = None
    error: str | None = None
    failure: Exception | None = field(default=None, repr=False)
    finished: threading.Event = field(default_factory=threading.Event, repr=False)

    def result(self) -> RebuildReport:
        """Wait for the job; its report, or the exception it failed with, raised again."""
        self.finished.wait()
        if self.failure is not None:
            raise self.failure
        assert self.report is not None
        return self.report

    def as_dict(self) -> dict[str, Any]:
        """The job as ``/v1/rebuilds/jobs/{id}`` answers it."""
        return {
            "job_id": self.job_id,
            "indexes": self.indexes,
            "force": self.force,
            "switch": self.switch,
            "status": self.status,
            "report": None if self.report is None else self.report.as_dict(),
            "error": self.error,
        }


class Service:
    """The Workspace plus the server's background work: sync jobs and index drains."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.jobs: dict[str, Job] = {}
        self.rebuild_jobs: dict[str, RebuildJob] = {}
        self._busy: set[str] = set()
        self._jobs_lock = threading.Lock()
        self.index_lock = threading.Lock()
        self.index_totals = IndexReport()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._drainer = threading.Thread(
            target=self._drain_loop, name="headwater-drain", daemon=True
        )
        self._events: EventPump | None = None  # sends change events ([events]) meanwhile

    @classmethod
    def open(cls, path: str | Path) -> Service:
        """The Service over the workspace whose config is ``path``."""
        return cls(open_workspace(path))

    def start(self) -> Service:
        """Open every sink and load the model now, once, then start the drain thread
        (a second call does nothing: ``serve`` starts it before the app's lifespan)."""
        if self._drainer.is_alive() or self._stop.is_set():
            return self
        for section in self.ws.index_sections:
            self.ws.sink(section.name)
        _ = self.ws.embedder
        self._drainer.start()
        self._wake.set()  # pending work left by an earlier process
        events = self.ws.runtime.events
        if events is not None:
            self._events = EventPump(events).start()
        return self

    def close(self) -> None:
        """Stop the drain thread and any work in flight, then close the workspace."""
        if self._stop.is_set():
            return  # closed already
        self._stop.set()
        self._wake.set()
        self.ws.cancel.set()
        if self._drainer.is_alive():
            self._drainer.join(timeout=30)
        if self._events is not None:
            self._events.stop()
        self.ws.close()

    # -- indexing --------------------------------------------------------------------

    def drain_soon(self) -> None:
        """Wake the background drain (debounced)."""
        self._wake.set()

    def drain_now(self) -> IndexReport:
        """Drain pending index work now, holding the index lock."""
        with self.index_lock:
            report = self.ws.index()
            self.index_totals.add(report)
            return report

    def _drain_loop(self) -> None:
        while not self._stop.is_set():
            self._wake.wait()
            if self._stop.is_set():
                return
            time.sleep(DEBOUNCE_S)
            self._wake.clear()
            try:
                self.drain_now()
            except Exception:  # a drain failure is retried on the next wake
                log.exception("background index drain failed; it is retried on the next commit")

    # -- sync jobs -------------------------------------------------------------------

    def start_sync(self, source_id: str, wait_s: float = 10.0) -> Job | None:
        """Start a sync of one source in a thread; None if one is already running.

        Returns once the run is recorded in the manifest (its run id is known) or the
        job finished, whichever comes first, at most ``wait_s`` seconds.
        """
        self.ws.source_section(source_id)
        before = self.ws.manifest.runs.latest(source_id)
        with self._jobs_lock:
            if source_id in self._busy:
                return None
            self._busy.add(source_id)
            job = Job(job_id=str(uuid.uuid4()), source=source_id)
            self.jobs[job.job_id] = job
        threading.Thread(
            target=self._run_job, args=(job,), name=f"headwater-sync-{source_id}", daemon=True
        ).start()
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and job.status not in ("done", "failed"):
            latest = self.ws.manifest.runs.latest(source_id)
            if latest is not None and (before is None or latest.run_id != before.run_id):
                job.run_id = job.run_id or latest.run_id
                break
            time.sleep(0.02)
        return job

    def _run_job(self, job: Job) -> None:
        job.status = "running"
        try:
            result = self.ws.sync([job.source], index=False)
            if result.runs:
                job.run_id = result.runs[0].run_id
            job.status = "done"
            self.drain_soon()
        except Exception as exc:
            job.status, job.error = "failed", f"{type(exc).__name__}: {exc}"
            log.warning("sync job %s of %s failed: %s", job.job_id, job.source, exc)
        finally:
            with self._jobs_lock:
                self._busy.discard(job.source)

    # -- rebuild jobs ----------------------------------------------------------------

    def rebuilding(self) -> RebuildJob | None:
        """The rebuild job running in this process, if any."""
        with self._jobs_lock:
            return next(
                (j for j in self.rebuild_jobs.values() if j.status in ("queued", "running")),
                None,
            )

    def start_rebuild(
        self, indexes: list[str] | None, *, force: bool, switch: bool
    ) -> RebuildJob | None:
        """Start ``Workspace.rebuild`` in a thread; None if a rebuild job is running."""
        for name in indexes or ():
            self.ws.index_section(name)  # an unknown index fails before the job starts
        with self._jobs_lock:
            if any(j.status in ("queued", "running") for j in self.rebuild_jobs.values()):
                return None
            job = RebuildJob(str(uuid.uuid4()), indexes, force, switch)
            self.rebuild_jobs[job.job_id] = job
        threading.Thread(
            target=self._run_rebuild, args=(job,), name="headwater-rebuild", daemon=True
        ).start()
        return job

    def _run_rebuild(self, job: RebuildJob) -> None:
        job.status = "running"
        try:
            with self.index_lock:
                job.report = self.ws.rebuild(job.indexes, force=job.force, switch=job.switch)
            job.status = "done"
        except Exception as exc:
            job.failure = exc
            job.status, job.error = "failed", f"{type(exc).__name__}: {exc}"
            log.warning("rebuild job %s failed: %s", job.job_id, exc)
        finally:
            job.finished.set()
