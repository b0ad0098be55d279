"""What one scheduled run does in its thread: a content sync, a permission sync, or the
read of a source's due hints.

Each runs the source here (the local executor) under the source's lease, records who ran
it, logs one line, and drains the indexer when the run changed something (one drain at
a time: ``drain`` is the scheduler's). A lease another process holds makes the run
``skipped``, not failed; a run that could not start is ``failed`` without a run record.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from sqlalchemy.exc import IntegrityError

from headwater.config import SourceSection
from headwater.errors import FatalError, HeadwaterError
from headwater.executor.local import LocalExecutor
from headwater.hints.queue import read_due
from headwater.manifest.runs import CANCELLED, FAILED, lease_owner
from headwater.manifest.schedule import ScheduleStore
from headwater.runtime import Runtime
from headwater.scheduler.outcome import HINTS, PERMISSIONS, SKIPPED, Feed, Outcome, ids
from headwater.sync.report import RunReport

log = logging.getLogger("headwater.scheduler")
Drain = Callable[[Runtime], None]


def run_content(
    rt: Runtime, section: SourceSection, kind: str, feed: Feed | None, drain: Drain
) -> Outcome:
    """One content run of ``section`` here; ``drain`` indexes what it changed."""
    store, line = ScheduleStore(rt.manifest.engine), f"sync {section.id}"
    if feed is not None:
        feed.start(line)
    try:
        progress = feed.sync if feed else None
        result = LocalExecutor(rt).sync([section.id], index=False, progress=progress)
    except IntegrityError:
        # Two processes created the source's (or its lease's) first row at once.
        log.info(
            "skipping %s: another process claimed it at the same moment",
            section.id,
            extra=ids(section.id),
        )
        return Outcome(section.id, SKIPPED)
    except HeadwaterError as exc:
        holder = store.lease_holder(section.id)
        if isinstance(exc, FatalError) and holder is not None and holder[0] != lease_owner():
            log.info(
                "skipping %s: its lease is held by %s",
                section.id,
                holder[0],
                extra=ids(section.id),
            )
            return Outcome(section.id, SKIPPED)
        log.error("run of %s could not start: %s", section.id, exc, extra=ids(section.id))
        return Outcome(section.id, FAILED, error=str(exc))
    finally:
        if feed is not None:
            feed.finish(line)
    if not result.runs:
        return Outcome(section.id, CANCELLED)
    report = result.runs[0]
    store.annotate(report.run_id, lease_owner(), kind, report.fetched)
    _log_run(section.id, report)
    if report.counts.new + report.counts.changed + report.counts.deleted:
        drain(rt)
    return Outcome(
        section.id,
        report.status,
        report.run_id,
        prune_blocked=report.prune_blocked is not None,
        error=report.error,
    )


def _log_run(source_id: str, report: RunReport) -> None:
    """The one line a finished content run logs: its outcome, time and counts."""
    c = report.counts
    log.info(
        "run %s of %s %s in %.1f s: %d seen, %d new, %d changed, %d unchanged, %d deleted, "
        "%d failed%s",
        report.run_id,
        source_id,
        report.status,
        report.duration_s,
        c.seen,
        c.new,
        c.changed,
        c.unchanged,
        c.deleted,
        c.failed,
        f"; error: {report.error}" if report.error else "",
        extra={
            **ids(source_id, report.run_id, report.status),
            "duration_s": round(report.duration_s, 3),
            **c.as_dict(),
        },
    )


def run_permissions(rt: Runtime, section: SourceSection, drain: Drain) -> Outcome:
    """One permission-only sync; its indexing is drained here, like a content run's."""
    try:
        result = LocalExecutor(rt).sync_permissions([section.id], index=False)
    except HeadwaterError as exc:
        holder = ScheduleStore(rt.manifest.engine).lease_holder(section.id)
        if isinstance(exc, FatalError) and holder is not None and holder[0] != lease_owner():
            log.info("skipping permissions of %s: lease held by %s", section.id, holder[0])
            return Outcome(section.id, SKIPPED, kind=PERMISSIONS)
        log.error("permission sync of %s could not start: %s", section.id, exc)
        return Outcome(section.id, FAILED, error=str(exc), kind=PERMISSIONS)
    (report,) = result.sources
    log.info(
        "permission sync of %s %s: %d checked, %d changed%s",
        section.id,
        report.status,
        report.checked,
        report.changed,
        f" error: {report.error}" if report.error else "",
    )
    if report.changed or report.groups is not None:
        drain(rt)
    status = FAILED if report.status == "failed" else report.status
    return Outcome(section.id, status, error=report.error, kind=PERMISSIONS)


def run_hints(rt: Runtime, source_id: str, drain: Drain) -> Outcome:
    """Read the due hints of ``source_id`` (see ``hints.queue``); drain what changed."""
    read = read_due(rt, source_id)
    if read is None:
        return Outcome(source_id, SKIPPED, kind=HINTS)
    log.info("hints of %s read (%s): %s", source_id, read.mode, read.as_dict(),
             extra=ids(source_id))  # fmt: skip
    if read.changed:
        drain(rt)
    return Outcome(source_id, read.mode, error=read.error, kind=HINTS)
