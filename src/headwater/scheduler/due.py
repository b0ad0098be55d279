"""What is due: a pure function from run history, clock and settings to work and a wake time.

The scheduler gathers, per source, what the manifest says (last run, last prune, how
many of the newest runs failed in a row, whether the newest run is still ``running``,
whether the source is paused) and hands it here with ``now``. ``decide`` answers which
sources to start, why, and when to look again; it reads no clock and no database, so
every rule is a row in a table-driven test.

Rules, in order: a paused source never starts; a source the scheduler is holding off
(its lease was held elsewhere) waits for the hold; a source whose newest run is still
``running`` is due at once (the runner resumes it, or the lease shows a live owner), and
so is one whose newest run was ``cancelled`` (stopped by SIGTERM or Ctrl-C: the next run
covers the same window again);
a source whose newest runs failed waits ``failure_backoff * 2**(n-1)`` (capped at
``backoff_max``) after the last failure, then retries; otherwise a sync is due
``refresh_every`` after the last run started and a prune ``prune_every`` after the
last prune (when the source can enumerate and has a ``prune_every`` of its own).

Permission syncs are planned beside content runs: a source with ``permissions_every``
is ``permissions_due`` that long after its last permission sync (at once when none is
known), unless it is paused or held off; a failing content sync does not delay them.
``next_due_at`` of a source not due is the earlier of its content and permission times.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

RESUME = "resume"
RETRY = "retry"
SYNC = "sync"
PRUNE = "prune"
FIRST = "first"


@dataclass(frozen=True)
class SourceState:
    """What the manifest (and the scheduler's memory) says about one source."""

    source_id: str
    refresh_every: timedelta
    prune_every: timedelta | None = None
    can_prune: bool = False
    last_started_at: datetime | None = None
    last_prune_at: datetime | None = None
    consecutive_failures: int = 0
    last_failure_at: datetime | None = None
    interrupted: bool = False
    paused: bool = False
    hold_until: datetime | None = None
    permissions_every: timedelta | None = None
    last_permissions_at: datetime | None = None


@dataclass(frozen=True)
class Backoff:
    initial: timedelta
    maximum: timedelta

    def wait(self, failures: int) -> timedelta:
        """The wait after ``failures`` consecutive failed runs (0 when none)."""
        if failures <= 0:
            return timedelta(0)
        doubled = self.initial * (1 << min(failures - 1, 40))
        return min(doubled, self.maximum)


@dataclass(frozen=True)
class SourcePlan:
    """One source's answer: due now (with a reason) or when it will be."""

    source_id: str
    due: bool
    reason: str | None
    next_due_at: datetime | None
    backoff_until: datetime | None
    paused: bool
    permissions_due: bool = False


@dataclass(frozen=True)
class Decision:
    plans: list[SourcePlan] = field(default_factory=list)

    @property
    def due(self) -> list[SourcePlan]:
        return [p for p in self.plans if p.due]

    @property
    def permissions_due(self) -> list[SourcePlan]:
        return [p for p in self.plans if p.permissions_due]

    def next_wake(self) -> datetime | None:
        """The earliest moment a source not due now becomes due (None: nothing will)."""
        times = [
            p.next_due_at
            for p in self.plans
            if not p.due and not p.permissions_due and p.next_due_at is not None
        ]
        return min(times) if times else None


def plan_source(state: SourceState, now: datetime, backoff: Backoff) -> SourcePlan:
    content = _plan_content(state, now, backoff)
    if state.permissions_every is None or state.paused:
        return content
    if state.hold_until is not None and state.hold_until > now:
        return content
    if state.last_permissions_at is None:
        return replace(content, permissions_due=True)
    permissions_at = state.last_permissions_at + state.permissions_every
    if permissions_at <= now:
        return replace(content, permissions_due=True)
    if content.due:
        return content
    when = (
        permissions_at if content.next_due_at is None else min(content.next_due_at, permissions_at)
    )
    return replace(content, next_due_at=when)


def _plan_content(state: SourceState, now: datetime, backoff: Backoff) -> SourcePlan:
    def plan(
        reason: str | None, when: datetime | None, until: datetime | None = None
    ) -> SourcePlan:
        due = reason is not None
        return SourcePlan(state.source_id, due, reason, now if due else when, until, state.paused)

    backoff_until = None
    if state.consecutive_failures > 0 and state.last_failure_at is not None:
        backoff_until = state.last_failure_at + backoff.wait(state.consecutive_failures)
        if backoff_until <= now:
            backoff_until = None
    if state.paused:
        return plan(None, None, backoff_until)
    if state.hold_until is not None and state.hold_until > now:
        return plan(None, state.hold_until, backoff_until)
    if state.interrupted:
        return plan(RESUME, None, backoff_until)
    if state.consecutive_failures > 0 and state.last_failure_at is not None:
        if backoff_until is not None:
            return plan(None, backoff_until, backoff_until)
        return plan(RETRY, None)
    if state.last_started_at is None:
        return plan(FIRST, None)
    sync_at = state.last_started_at + state.refresh_every
    if sync_at <= now:
        return plan(SYNC, None)
    if state.can_prune and state.prune_every is not None:
        prune_at = (state.last_prune_at or now) + state.prune_every
        if state.last_prune_at is None or prune_at <= now:
            return plan(PRUNE, None)
        return plan(None, min(sync_at, prune_at))
    return plan(None, sync_at)


def decide(states: list[SourceState], now: datetime, backoff: Backoff) -> Decision:
    """Plan every source; ``Decision.due`` keeps the input order (config order)."""
    return Decision([plan_source(s, now, backoff) for s in states])
