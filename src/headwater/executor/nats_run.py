"""What a NATS worker does with one run message, and whether it acks or naks it.

The body is the Celery sync task's (``work.sync_one``): the local executor's sync of one
source under its fenced lease, so windows, gates, batch commits and checkpoints are the
same, and a redelivered message resumes the interrupted run from its checkpoint; then,
when the message asks for it, the documents it left pending are indexed under claims
(``work.index_claimed``, the message id as owner, so a redelivery takes its own claims
back at once). An ack means "this message was handled", not "the sync succeeded": a run
that ended ``failed`` is recorded in the manifest like any run and acked, and the
scheduler's failure backoff plans the retry. The verdict per outcome:

- a run after the message's ``after_run`` already ended (another message, another
  process), or for a resume message ``after_run`` itself: ack, nothing runs (a
  duplicate is harmless);
- the run ended (any status but ``cancelled``): ack;
- ``cancelled`` (this worker is stopping): nak at once, another worker resumes the run;
- the lease is held by a live process: nak until the lease would expire (on the last
  delivery: ack, that holder's run covers the message);
- a retryable error (``TransientError``, a lost database connection, an OS error) before
  the run could record an outcome: nak with exponential backoff; on delivery
  ``max_deliver``: the run is recorded ``failed`` with the reason, and acked;
- any other error: recorded ``failed`` at once (retrying cannot help), and acked.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy.exc import InterfaceError, OperationalError

from headwater import failpoints
from headwater.clock import utcnow
from headwater.errors import HeadwaterError, LeaseLost, SourceBusy, TransientError
from headwater.executor.nats_queue import RunMessage
from headwater.executor.work import index_claimed, sync_one
from headwater.manifest.runs import CANCELLED, COMPLETED_WITH_ERRORS, FAILED, SUCCEEDED
from headwater.runtime import Runtime
from headwater.sync.runner import record_unstarted_run

log = logging.getLogger("headwater.executor")

RETRYABLE = (TransientError, OperationalError, InterfaceError, OSError)
ENDED = (SUCCEEDED, COMPLETED_WITH_ERRORS, FAILED)
BACKOFF_MAX_S = 60.0
BUSY_WAIT_MAX_S = 60.0


@dataclass(frozen=True)
class Verdict:
    """What becomes of the message: ack, or nak with a redelivery delay; and why."""

    ack: bool
    note: str
    delay_s: float = 0.0


def backoff(delivered: int) -> float:
    """The nak delay after delivery ``delivered`` failed: 1 s, 2 s, 4 s… at most a minute."""
    return min(BACKOFF_MAX_S, float(2 ** max(0, delivered - 1)))


def served_by(rt: Runtime, message: RunMessage) -> str | None:
    """The id of the run that did what the message asks for already, or None: a run
    after its ``after_run`` that ended, or (a resume) ``after_run`` itself, ended."""
    latest = rt.manifest.runs.latest(message.source_id)
    if latest is None or latest.status not in ENDED:
        return None
    if latest.run_id == message.after_run and not message.resume:
        return None
    return latest.run_id


def give_up(rt: Runtime, source_id: str, reason: str) -> str | None:
    """Record the source's run as ``failed`` with ``reason`` (closing an interrupted run,
    or a new run record when none is open); its run id, or None for a source no longer
    configured (nothing to record against)."""
    try:
        section = rt.sources.section(source_id)
    except HeadwaterError as exc:
        log.error("run message for %s dropped: %s", source_id, exc)
        return None
    return record_unstarted_run(rt.manifest, source_id, section.type, reason).run_id


def _reason(exc: BaseException, delivered: int) -> str:
    detail = " ".join(str(exc).split()) or type(exc).__name__
    return (
        f"{type(exc).__name__}: {detail} (the NATS executor gave up after {delivered} "
        f"deliver{'y' if delivered == 1 else 'ies'}; the scheduler plans the next run "
        "after its failure backoff)"
    )


def handle(rt: Runtime, message: RunMessage, msg_id: str, delivered: int) -> Verdict:
    """Run the message's source here and say what becomes of the message."""
    source_id, max_deliver = message.source_id, rt.config.executor.max_deliver
    ran = served_by(rt, message)
    if ran is not None:
        return Verdict(True, f"run {ran} of {source_id} followed run {message.after_run} already")
    try:
        failpoints.failpoint(failpoints.BEFORE_QUEUED_RUN)
        outcome = sync_one(rt, source_id, force=message.force)
    except SourceBusy as busy:
        if delivered >= max_deliver:
            return Verdict(True, f"{source_id} is being synced by {busy.holder}; its run covers it")
        wait = (busy.until - utcnow() + timedelta(seconds=0.5)).total_seconds()
        return Verdict(
            False, f"{source_id} is busy ({busy.holder})", min(BUSY_WAIT_MAX_S, max(0.5, wait))
        )
    except LeaseLost as exc:  # taken over mid-run: the taker runs it; look again soon
        return Verdict(False, f"lease of {source_id} taken over: {exc}", 1.0)
    except RETRYABLE as exc:
        if delivered >= max_deliver:
            run_id = give_up(rt, source_id, _reason(exc, delivered))
            return Verdict(True, f"gave up on {source_id} (run {run_id} failed): {exc}")
        return Verdict(False, f"retryable failure of {source_id}: {exc}", backoff(delivered))
    except Exception as exc:  # recorded failed at once: a retry cannot mend it
        log.exception("run message for %s failed", source_id)
        run_id = give_up(rt, source_id, _reason(exc, delivered))
        return Verdict(True, f"run {run_id} of {source_id} failed: {exc}")
    run = outcome.run
    if run is None or run.status == CANCELLED:
        return Verdict(False, f"run of {source_id} stopped (this worker stops)")
    if message.index and outcome.index_tasks_needed and not rt.controls.cancel.is_set():
        try:
            index_claimed(rt, owner=f"nats:{msg_id}"[:200])
        except HeadwaterError as exc:  # the documents stay pending; a later drain takes them
            log.error("indexing after run %s of %s failed: %s", run.run_id, source_id, exc)
    return Verdict(True, f"run {run.run_id} of {source_id} {run.status}")
