"""From a runtime to the due decision's inputs, and the scheduling fields of ``status``.

``source_states`` reads the manifest (run history, last prune, pause switches) for each
configured source and builds the ``SourceState`` rows that ``due.decide`` plans from;
``schedule_status`` turns the same plans into the ``paused``, ``next_due_at``,
``backoff_until`` and ``lease`` fields ``headwater status --json`` shows per source
(``lease``: the process holding the source's lease and when it expires unless its
heartbeat renews it, or null when no run holds it).

The time of a source's last permission sync comes from the manifest
(``source_schedule.last_permissions_at``, written by the scheduler after each one), so a
restarted scheduler keeps each source's ``permissions_every`` rhythm instead of running
every permission sync at once; a source never permission-synced is due at once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

from headwater.clock import iso, utcnow
from headwater.config import SchedulerSection, SourceSection
from headwater.manifest.schedule import ScheduleStore
from headwater.reports import LeaseHolder, SourceSchedule
from headwater.runtime import Runtime
from headwater.scheduler.due import Backoff, Decision, SourceState, decide
from headwater.units import parse_duration


def _duration(value: str) -> timedelta:
    parsed = parse_duration(value)
    assert parsed is not None  # validated with the config
    return parsed


def backoff_of(section: SchedulerSection) -> Backoff:
    """The ``[scheduler]`` failure backoff."""
    return Backoff(_duration(section.failure_backoff), _duration(section.backoff_max))


def refresh_every(scheduler: SchedulerSection, section: SourceSection) -> timedelta:
    """How often the source is synced: its own ``refresh_every`` or the scheduler's."""
    return _duration(section.refresh_every or scheduler.refresh_every)


def source_states(
    rt: Runtime,
    sections: Sequence[SourceSection],
    holds: Mapping[str, datetime] | None = None,
) -> list[SourceState]:
    """What ``due.decide`` plans from, per section: its history, pauses and holds."""
    store = ScheduleStore(rt.manifest.engine)
    paused = store.paused()
    permissions_done = store.permissions_done()
    states = []
    for section in sections:
        history = store.history(section.id)
        states.append(
            SourceState(
                source_id=section.id,
                refresh_every=refresh_every(rt.config.scheduler, section),
                prune_every=parse_duration(section.prune_every),
                can_prune=rt.sources.can_enumerate(section),
                last_started_at=history.last_started_at,
                last_prune_at=rt.manifest.runs.last_prune_at(section.id),
                consecutive_failures=history.consecutive_failures,
                last_failure_at=history.last_failure_at,
                interrupted=history.interrupted,
                paused=section.id in paused,
                hold_until=(holds or {}).get(section.id),
                permissions_every=parse_duration(section.permissions_every),
                last_permissions_at=permissions_done.get(section.id),
            )
        )
    return states


def plan_all(rt: Runtime, now: datetime | None = None) -> Decision:
    """The plan of every configured source now."""
    states = source_states(rt, list(rt.config.source))
    return decide(states, now or utcnow(), backoff_of(rt.config.scheduler))


def schedule_status(rt: Runtime) -> dict[str, SourceSchedule]:
    """Per source id: ``paused``, ``next_due_at``, ``backoff_until`` and ``lease``."""
    store = ScheduleStore(rt.manifest.engine)
    out: dict[str, SourceSchedule] = {}
    for p in plan_all(rt).plans:
        holder = store.lease_holder(p.source_id)
        out[p.source_id] = SourceSchedule(
            paused=p.paused,
            next_due_at=iso(p.next_due_at),
            backoff_until=iso(p.backoff_until),
            lease=None if holder is None else LeaseHolder(holder[0], iso(holder[1])),
        )
    return out
