"""``headwater run``: one process that keeps every source fresh, without a broker.

Each cycle plans every selected source with ``due.decide`` and starts the due ones in a
thread pool (at most ``max_concurrent`` at once), each as the local executor's
``sync([source], index=False)``; after a run that changed something its thread drains
the indexer (one drain at a time). The sync runner takes the source's lease: when
another process holds it, the run is skipped (not failed) and the source is held off for
a moment, so two schedulers on one PostgreSQL manifest share sources and never run one
twice at once. A source whose newest run is still ``running`` (its process died) is due
at once, and the runner resumes that run. A source whose ``permissions_every`` is due
(and no content run is due) gets ``sync_permissions([source], index=False)`` instead,
under the same lease; its time is recorded in the manifest (see ``plans``), so a restart
keeps it. Housekeeping (tombstone and run-history retention, content-store garbage, the
embedding-cache cap; see ``housekeeping``) runs at start and every ten minutes. Work
left pending before the start (a killed or stopped scheduler, ``sync --no-index``) is
drained once at start in the background (``background``), and a failed drain is retried
a minute later, even when no run changes anything. Hints (docs/live.md): a ``watch =
true`` source is watched while the scheduler runs, and each cycle reads the due hints of
sources with no run in flight and not paused (``scheduler.runs.run_hints``), in the same
pool and under the same lease; with a source that takes hints, it looks at least every
``HINT_POLL_S``. With ``[executor] type = "nats"`` the due runs are published to the
work-queue stream instead (``publish``), after a reconcile at start. With ``[events]``,
a pump thread sends the change events of the outbox while the scheduler runs
(``headwater.events``), and drains once more before it exits. Vendor subscriptions that
expire (a source's ``notification_url``) are created and renewed every minute
(``hints.subscriptions``).

Signals: SIGTERM or SIGINT stops claiming, sets the runtime's cancel event (runs stop
after their current batch and release their leases; a drain stops within one embedding
slice, its batch left pending) and exits 0 (``--once`` interrupted by SIGINT exits 130).
What the stop waits for is logged at once and every few seconds; a second signal aborts
at once (exit 128 + the signal's number; the runs in flight stay ``running``, and the
next scheduler or sync takes their leases over and resumes them from their checkpoints).
SIGHUP re-reads the config once the runs in flight are done: the runtime is reopened, so
new sources start and removed ones are no longer planned.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from datetime import datetime, timedelta
from pathlib import Path

from sqlalchemy.exc import SQLAlchemyError

from headwater.clock import utcnow
from headwater.config import SourceSection
from headwater.errors import HeadwaterError, TransientError
from headwater.hints.subscriptions import SubscriptionKeeper
from headwater.manifest.liveness import SCHEDULER, Heartbeat
from headwater.manifest.runs import FAILED, lease_owner
from headwater.manifest.schedule import ScheduleStore
from headwater.runtime import Runtime
from headwater.scheduler.background import Drains, Pumping
from headwater.scheduler.due import PRUNE, SYNC, SourcePlan, decide
from headwater.scheduler.housekeeping import housekeep_logged
from headwater.scheduler.outcome import (
    PERMISSIONS,
    Feed,
    Outcome,
    exit_code,
    ids,
)
from headwater.scheduler.plans import backoff_of, source_states
from headwater.scheduler.publish import RemoteRuns
from headwater.scheduler.reaping import permissions_ran, reap
from headwater.scheduler.runs import run_content, run_hints, run_permissions

log = logging.getLogger("headwater.scheduler")
Inflight = dict[str, Future[Outcome]]  # source id -> its run in the thread pool

HOUSEKEEPING_EVERY = timedelta(minutes=10)
BROKER_RETRY = timedelta(seconds=30)
MAX_SLEEP_S = 5.0
MIN_SLEEP_S = 0.2
STOP_LOG_EVERY_S = 5.0  # while stopping: how often to say what is still awaited
HINT_POLL_S = 0.5  # how often the queue is looked at while a source takes hints


class Scheduler:
    """Plan, claim, run and drain until stopped (or, with ``once``, until done)."""

    def __init__(
        self,
        config: Path,
        *,
        sources: Sequence[str] = (),
        once: bool = False,
        max_concurrent: int | None = None,
        open_runtime: Callable[[Path], Runtime] = Runtime.open,
        progress: Feed | None = None,
    ) -> None:
        self.config = config
        self.progress = progress  # progress lines of runs and drains (the CLI's reporter)
        self.only = list(sources)
        self.once = once
        self._open = open_runtime
        self.rt = open_runtime(config)
        for source_id in self.only:
            self.rt.sources.section(source_id)  # an unknown id is a usage error, now
        self.max_concurrent = max_concurrent or self.rt.config.scheduler.max_concurrent
        self.outcomes: list[Outcome] = []
        self._wake = threading.Event()
        self._stopping = False
        self._interrupted = False
        self._reload = False
        self._holds: dict[str, datetime] = {}
        self._attempted: set[str] = set()  # source ids, and "id:permissions", in --once
        self._housekept: datetime | None = None
        self._subscriptions = SubscriptionKeeper()  # Graph subscriptions, Drive channels
        # --once drains at exit; with Celery, index tasks follow each run on the workers
        local = self.rt.config.executor.type != "celery"
        self._drains = Drains(progress, utcnow() if local and not once else None, not once)
        self._inflight: Inflight = {}
        self._pumping = Pumping()  # sends change events ([events]) meanwhile
        self._remote = RemoteRuns()  # queues due runs for Celery or NATS workers

    def install_signal_handlers(self) -> None:
        """Stop on SIGTERM and SIGINT, reload the config on SIGHUP."""
        signal.signal(signal.SIGTERM, self._on_stop)
        signal.signal(signal.SIGINT, self._on_stop)
        if hasattr(signal, "SIGHUP"):
            signal.signal(signal.SIGHUP, self._on_reload)

    def _on_stop(self, signum: int, _frame: object) -> None:
        name = signal.Signals(signum).name
        if self._stopping:  # the second signal: do not wait any more
            log.warning(
                "%s again: aborting now (it was waiting for %s); runs in flight stay "
                "running in the manifest and the next scheduler or sync resumes them from "
                "their checkpoints",
                name,
                self._awaited() or "nothing",
            )
            for handler in logging.getLogger().handlers:
                handler.flush()
            os._exit(128 + signum)
        if signum == signal.SIGINT:
            self._interrupted = True
        self.stop()
        log.warning(
            "%s: stopping; waiting for %s; send it again to abort at once",
            name,
            self._awaited() or "nothing in flight",
        )

    def _awaited(self) -> str:
        """What a stop waits for, in words: the runs in flight and a drain."""
        running = sorted(sid for sid, f in self._inflight.items() if not f.done())
        parts = [f"runs of {', '.join(running)} (each stops after its current batch)"]
        if self._drains.indexing:
            parts.append("indexing (stops within one embedding slice of 64 chunks)")
        return " and ".join(parts[0 if running else 1 :])

    def _on_reload(self, _signum: int, _frame: object) -> None:
        self._reload = True
        self._wake.set()

    def stop(self) -> None:
        """Stop claiming; runs in flight stop after their current batch."""
        self._stopping = True
        self.rt.controls.cancel.set()
        self._wake.set()

    def serve(self) -> int:
        """Run until stopped (``once``: until every due source ran); the exit code."""
        inflight: Inflight = self._inflight
        pool = ThreadPoolExecutor(self.max_concurrent, thread_name_prefix="headwater-run")
        heartbeat = Heartbeat(lambda: self.rt.manifest.engine, lease_owner(), SCHEDULER).start()
        log.info(
            "scheduler %s started: %d sources, at most %d at once",
            lease_owner(),
            len(self._sections()),
            self.max_concurrent,
        )
        from headwater.hints.watch import Watcher  # watchdog and imapclient: only when run

        watcher = None if self.once else Watcher(lambda: self.rt, on_queued=self._wake.set)
        self._pumping.start(self.rt)
        try:
            self._remote.reconcile(self.rt, [s.id for s in self._sections()])
            if watcher is not None:
                watcher.start()
            while not self._stopping:
                try:
                    wake_at = self._cycle(pool, inflight)
                except SQLAlchemyError as exc:  # the manifest server restarts: wait, go on
                    if self.once:
                        raise
                    reason = " ".join(str(getattr(exc, "orig", None) or exc).split())
                    log.error("manifest unreachable; retrying in %.0f s: %s", MAX_SLEEP_S, reason)
                    wake_at = None
                if self.once and not inflight and wake_at is None:
                    break
                self._sleep_until(wake_at)
        finally:
            if watcher is not None:
                watcher.stop()
            self._wait_for_work(inflight)
            pool.shutdown(wait=True)
            self._drains.join()
            self._reap(inflight)
            if not self._stopping and self.once:
                self._drain()
            heartbeat.stop()
            self._pumping.stop(self.rt)
            self._remote.close()
            self.rt.close()
        log.info("scheduler %s stopped", lease_owner())
        return self.exit_code()

    def _wait_for_work(self, inflight: Inflight) -> None:
        """Wait for the runs in flight and the drain, saying while stopping what is
        still awaited every ``STOP_LOG_EVERY_S`` (a stop was silent for minutes)."""
        said = time.monotonic()
        while True:
            running = [f for f in inflight.values() if not f.done()]
            drainer = self._drains.background()
            if not running and drainer is None:
                return
            if running:
                wait(running, timeout=1.0)
            elif drainer is not None:
                drainer.join(timeout=1.0)
            if self._stopping and time.monotonic() - said >= STOP_LOG_EVERY_S:
                said = time.monotonic()
                log.info("stopping: still waiting for %s", self._awaited() or "a thread")

    def _cycle(self, pool: ThreadPoolExecutor, inflight: Inflight) -> datetime | None:
        self._reap(inflight)
        if self._reload and not inflight and self._drains.background() is None:
            self._reopen()
        self._housekeeping()
        self._drains.catch_up(self.rt)
        wake_at = self._dispatch(pool, inflight)
        if self.once or self._stopping or self._reload:
            return wake_at
        self._subscriptions.tick(self.rt, [s.id for s in self._sections()])
        return self._read_hints(pool, inflight, wake_at)

    def _read_hints(
        self, pool: ThreadPoolExecutor, inflight: Inflight, wake_at: datetime | None
    ) -> datetime | None:
        """Start the hint reads of sources with due hints and no run in flight; return
        when to look again (at the latest ``HINT_POLL_S`` from now while hints can come)."""
        sections = self._sections()
        if not any(s.watch or s.webhook_secret is not None for s in sections):
            return wake_at
        known = {s.id for s in sections} - ScheduleStore(self.rt.manifest.engine).paused()
        for source_id in self.rt.manifest.hints.due_sources():  # a paused source's wait
            if source_id in inflight or source_id not in known:
                continue
            if len(inflight) >= self.max_concurrent:
                break
            future = pool.submit(run_hints, self.rt, source_id, self._drain)
            future.add_done_callback(lambda _f: self._wake.set())
            inflight[source_id] = future
        poll = utcnow() + timedelta(seconds=HINT_POLL_S)
        return poll if wake_at is None else min(wake_at, poll)

    def exit_code(self) -> int:
        """The process's exit code from the outcomes so far."""
        return exit_code(
            self.outcomes, once=self.once, interrupted=self._interrupted, drain=self._drains.ok
        )

    def _sections(self) -> list[SourceSection]:
        sections = list(self.rt.config.source)
        if self.only:
            sections = [s for s in sections if s.id in self.only]
        return sections

    def _dispatch(self, pool: ThreadPoolExecutor, inflight: Inflight) -> datetime | None:
        """Start what is due; return when to look again (None: nothing more, in --once)."""
        if self._reload or self._stopping:
            return utcnow() + timedelta(seconds=MIN_SLEEP_S) if inflight else None
        now = utcnow()
        candidates = [s for s in self._sections() if s.id not in inflight]
        states = source_states(self.rt, candidates, self._holds)
        decision = decide(states, now, backoff_of(self.rt.config.scheduler))
        for plan in decision.plans:
            content = plan.due and plan.source_id not in self._attempted
            permissions = plan.permissions_due and (
                f"{plan.source_id}:{PERMISSIONS}" not in self._attempted
            )
            if not content and not permissions:
                continue
            if not content:
                if len(inflight) >= self.max_concurrent:
                    break
                section = self.rt.sources.section(plan.source_id)
                log.info("starting permission sync of %s", plan.source_id)
                future = pool.submit(self._run_permissions, self.rt, section)
                future.add_done_callback(lambda _f: self._wake.set())
                inflight[plan.source_id] = future
                if self.once:
                    self._attempted.add(f"{plan.source_id}:{PERMISSIONS}")
                continue
            if self.rt.config.executor.type in ("celery", "nats"):  # workers run it
                self._enqueue(plan)
                continue
            if len(inflight) >= self.max_concurrent:
                break
            section = self.rt.sources.section(plan.source_id)
            kind = PRUNE if plan.reason == PRUNE or self._prune_due(section) else SYNC
            log.info(
                "starting %s of %s (%s)",
                kind,
                plan.source_id,
                plan.reason,
                extra=ids(plan.source_id),
            )
            future = pool.submit(self._run_one, self.rt, section, kind)
            future.add_done_callback(lambda _f: self._wake.set())
            inflight[plan.source_id] = future
            if self.once:
                self._attempted.add(plan.source_id)
        if self.once:
            return utcnow() if inflight or self._more_in_once(decision.plans) else None
        wake = decision.next_wake()
        return wake if wake is not None else now + timedelta(seconds=MAX_SLEEP_S)

    def _enqueue(self, plan: SourcePlan) -> None:
        """Celery or NATS: queue the due source. A broker that refuses leaves nothing
        queued; the source is held off for ``BROKER_RETRY`` and tried again (``--once``:
        failed)."""
        self._attempted.update([plan.source_id] if self.once else [])
        try:
            self._remote.queue(self.rt, plan.source_id, plan.reason or SYNC)
        except TransientError as exc:
            log.error("%s; retrying in %.0f s", exc, BROKER_RETRY.total_seconds(),
                      extra=ids(plan.source_id))  # fmt: skip
            self._holds[plan.source_id] = utcnow() + BROKER_RETRY
            if self.once:
                self.outcomes.append(Outcome(plan.source_id, FAILED, error=str(exc)))

    def _more_in_once(self, plans: Sequence[SourcePlan]) -> bool:
        """Whether ``--once`` still has a permission sync to start after a content run."""
        return any(
            p.permissions_due and f"{p.source_id}:{PERMISSIONS}" not in self._attempted
            for p in plans
        )

    def _prune_due(self, section: SourceSection) -> bool:
        return (
            section.prune_every is not None
            and self.rt.sources.can_enumerate(section)
            and self.rt.prune_due(section)
        )

    def _sleep_until(self, moment: datetime | None) -> None:
        seconds = MAX_SLEEP_S if moment is None else (moment - utcnow()).total_seconds()
        self._wake.wait(min(MAX_SLEEP_S, max(MIN_SLEEP_S, seconds)))
        self._wake.clear()

    def _reap(self, inflight: Inflight) -> None:
        """Take the finished runs out of ``inflight`` into ``outcomes`` (``reaping``)."""
        backoff = backoff_of(self.rt.config.scheduler).initial
        for source_id in reap(inflight, self.outcomes, self._holds, backoff):
            permissions_ran(self.rt, source_id)

    def _reopen(self) -> None:
        self._reload = False
        try:
            fresh = self._open(self.config)
        except HeadwaterError as exc:
            log.error("config not reloaded (keeping the old one): %s", exc)
            return
        self._pumping.stop(self.rt)
        self.rt.close()
        self.rt = fresh
        self._pumping.start(self.rt)
        gone = [s for s in self.only if s not in {x.id for x in fresh.config.source}]
        if gone:
            log.warning("sources no longer configured, no longer scheduled: %s", ", ".join(gone))
        log.info("config reloaded: %d sources", len(self._sections()))

    def _run_one(self, rt: Runtime, section: SourceSection, kind: str) -> Outcome:
        return run_content(rt, section, kind, self.progress, self._drain)

    def _run_permissions(self, rt: Runtime, section: SourceSection) -> Outcome:
        return run_permissions(rt, section, self._drain)

    def _drain(self, rt: Runtime | None = None) -> None:
        """Index what the runtime holds pending (``drains``), after a run or at exit."""
        self._drains.drain(rt or self.rt)

    def _housekeeping(self) -> None:
        now = utcnow()
        if self._housekept is None or now - self._housekept >= HOUSEKEEPING_EVERY:
            self._housekept = now
            housekeep_logged(self.rt, now, log)
