"""What the CLI says about finished syncs: the INFO log lines and the exit code.

The core logs where it acts (run start, batches, retries, lease takeovers); this module
logs the outcome of each run as one line with its counts and timings, so ``-v`` (or
``--log-format json`` for a log shipper) gives a complete operational record.
"""

from __future__ import annotations

import logging

from headwater.cli import exits
from headwater.reports import SyncResult

log = logging.getLogger("headwater.cli")


def log_sync(result: SyncResult) -> None:
    """Log one INFO line per source run of ``result`` with its counts."""
    for run in result.runs:
        c = run.counts
        log.info(
            "run %s of %s %s in %.1f s: %d seen, %d new, %d changed, %d unchanged, "
            "%d deleted, %d failed",
            run.run_id,
            run.source,
            run.status,
            run.duration_s,
            c.seen,
            c.new,
            c.changed,
            c.unchanged,
            c.deleted,
            c.failed,
            extra={
                "run_id": run.run_id,
                "source": run.source,
                "status": run.status,
                "duration_s": round(run.duration_s, 3),
                **c.as_dict(),
            },
        )
        if run.prune_blocked:
            b = run.prune_blocked
            log.warning(
                "prune of %s blocked by the safety fraction: %s of %s documents would be "
                "deleted (> %.0f%%), %s deleted",
                run.source,
                b["candidates"],
                b["active"],
                100 * float(b["max_fraction"]),
                b["deleted"],
                extra={"source": run.source, "prune_blocked": b},
            )
    for skipped in result.skipped:
        log.info(
            "%s skipped: its lease is held by %s until %s",
            skipped.source,
            skipped.holder,
            skipped.until,
            extra={"source": skipped.source, "status": "skipped", "holder": skipped.holder},
        )
    idx = result.index
    log.info(
        "sync done in %.1f s; indexing %.1f s: %d replaced, %d deleted, %d chunks, %d failed",
        result.duration_s,
        idx.duration_s,
        idx.replaced,
        idx.deleted,
        idx.chunks,
        idx.failed,
        extra={"duration_s": round(result.duration_s, 3)},
    )


def sync_exit(result: SyncResult, *, cancelled: bool) -> int:
    """0 done, 1 a run failed, 2 one failed on its configuration, 3 a prune was blocked,
    75 a source was skipped as busy,
    130 Ctrl-C (see ``cli/exits.py``)."""
    return exits.for_runs(
        (r.status for r in result.runs),
        needs_person=any(r.prune_blocked for r in result.runs),
        cancelled=cancelled,
        busy=bool(result.skipped),
        config_error=any(
            r.status == "failed" and exits.failed_on_config(r.error) for r in result.runs
        ),
    )
