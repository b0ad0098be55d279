"""What a finished run means for the scheduler's next plans.

Its outcome is recorded (a hint read is not: no run, no history); a run skipped because
another process holds the source's lease holds the source off for ``LEASE_HELD_RETRY``;
one that failed before a run record existed (so there is no history to back off from)
for the first backoff step; one the manifest's connection failed under (the server
restarts) for ``MANIFEST_RETRY`` only, logged as an outage, not as a crash: the source
did nothing wrong, and its next run resumes as soon as the manifest answers; a
permission sync records when it ran, failed ones too (the next one is an interval away).
"""

from __future__ import annotations

import logging
from concurrent.futures import Future
from datetime import datetime, timedelta

from sqlalchemy.exc import InterfaceError, OperationalError, SQLAlchemyError

from headwater.clock import utcnow
from headwater.errors import HeadwaterError
from headwater.manifest.runs import FAILED
from headwater.manifest.schedule import ScheduleStore
from headwater.runtime import Runtime
from headwater.scheduler.outcome import HINTS, PERMISSIONS, SKIPPED, Outcome

log = logging.getLogger("headwater.scheduler")
LEASE_HELD_RETRY = timedelta(seconds=5)
MANIFEST_RETRY = timedelta(seconds=5)  # the scheduler's own retry while the manifest is away


def reap(
    inflight: dict[str, Future[Outcome]],
    outcomes: list[Outcome],
    holds: dict[str, datetime],
    backoff: timedelta,
) -> list[str]:
    """Move the done runs of ``inflight`` to ``outcomes`` and set or clear their sources'
    ``holds``; the sources whose permission sync ran."""
    permissions: list[str] = []
    for source_id, future in list(inflight.items()):
        if not future.done():
            continue
        del inflight[source_id]
        try:
            outcome = future.result()
        except (OperationalError, InterfaceError) as exc:  # the manifest went away under it
            reason = " ".join(str(exc.orig or exc).split())
            log.error(
                "run of %s stopped: manifest unreachable; due again in %.0f s: %s",
                source_id,
                MANIFEST_RETRY.total_seconds(),
                reason,
            )
            outcomes.append(Outcome(source_id, FAILED, error=f"manifest unreachable: {reason}"))
            holds[source_id] = utcnow() + MANIFEST_RETRY
            continue
        except Exception as exc:  # a bug in a run thread: logged, the loop goes on
            log.exception("run of %s crashed", source_id)
            outcome = Outcome(source_id, FAILED, error=f"{type(exc).__name__}: {exc}")
        if outcome.kind == HINTS:
            continue  # a hint read: no run, no history, no hold
        outcomes.append(outcome)
        if outcome.status != SKIPPED and outcome.kind == PERMISSIONS:
            permissions.append(source_id)  # failed too: next interval
            continue
        if outcome.status == SKIPPED:
            holds[source_id] = utcnow() + LEASE_HELD_RETRY
        elif outcome.status == FAILED and outcome.run_id is None:
            holds[source_id] = utcnow() + backoff
        else:
            holds.pop(source_id, None)
    return permissions


def permissions_ran(rt: Runtime, source_id: str) -> None:
    """Record that the permission sync of ``source_id`` ran (its next one is planned
    from now); a manifest error is logged (it is due again at the next plan)."""
    try:
        ScheduleStore(rt.manifest.engine).set_permissions_done(source_id, utcnow())
    except (HeadwaterError, SQLAlchemyError) as exc:
        log.error("could not record the permission sync of %s: %s", source_id, exc)
