"""The scheduler's reads and writes on the manifest: run history, pause switches, leases.

Nothing here changes how runs or leases work; it reads the ``runs`` and ``leases`` rows
the sync runner writes, records who ran a run (``owner``) and how much it fetched once
the run is back, keeps the ``source_schedule`` pause switch and the time of each
source's last permission sync, and drops run history older than ``keep_runs_for``.
``kind`` is derived: a run whose deletes were decided by a complete listing or an
enumeration (its ``prune`` report exists) is a ``prune`` run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, delete, desc, insert, select, update

from headwater.clock import as_utc, iso, utcnow
from headwater.errors import ConfigError
from headwater.manifest import schema as t
from headwater.manifest.db import begin_write
from headwater.manifest.records import RunRecord
from headwater.manifest.runs import CANCELLED, FAILED, RUNNING

BACKOFF_LOOKBACK = 30  # consecutive failures counted at most (the wait is capped anyway)
SHORT_ID = (
    t.SHORT_RUN_ID
)  # characters of a run id that tables show, more only where two runs share them
MIN_PREFIX = 4  # the shortest prefix `runs show` takes for a run id
CANDIDATES_SHOWN = 5  # run ids an ambiguous prefix's error lists


@dataclass(frozen=True)
class SourceHistory:
    """A source's recent runs as the due decision reads them."""

    last_started_at: datetime | None
    interrupted: bool
    consecutive_failures: int
    last_failure_at: datetime | None


class ScheduleStore:
    """The scheduler's tables and views in the manifest database."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    # -- what the due decision needs -----------------------------------------------------

    def history(self, source_id: str) -> SourceHistory:
        """A source's recent runs as the due decision reads them."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(t.runs.c.status, t.runs.c.started_at, t.runs.c.finished_at)
                .where(t.runs.c.source_id == source_id)
                .order_by(desc(t.runs.c.started_at))
                .limit(BACKOFF_LOOKBACK)
            ).all()
        if not rows:
            return SourceHistory(None, False, 0, None)
        failures = 0
        for row in rows:
            if row.status != FAILED:
                break
            failures += 1
        newest = rows[0]
        last_failure = None
        if failures:
            last_failure = as_utc(newest.finished_at or newest.started_at)
        return SourceHistory(
            last_started_at=as_utc(newest.started_at),
            # A run left running (its process died) or stopped by SIGTERM/Ctrl-C did not
            # finish its window: due at once, not a whole refresh_every later.
            interrupted=newest.status in (RUNNING, CANCELLED),
            consecutive_failures=failures,
            last_failure_at=last_failure,
        )

    def lease_holder(self, source_id: str) -> tuple[str, datetime] | None:
        """The owner of the source's live lease and its expiry, or None."""
        with self.engine.connect() as conn:
            row = conn.execute(
                select(t.leases.c.owner, t.leases.c.expires_at).where(
                    t.leases.c.source_id == source_id
                )
            ).first()
        if row is None or as_utc(row.expires_at) <= utcnow():
            return None  # a released or expired lease is held by no one
        return (row.owner, as_utc(row.expires_at))

    # -- pause switches ------------------------------------------------------------------

    def paused(self) -> set[str]:
        """The ids of the paused sources."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(t.source_schedule.c.source_id).where(t.source_schedule.c.paused == 1)
            )
            return {r[0] for r in rows}

    def set_paused(self, source_id: str, paused: bool, by: str) -> bool:
        """Set the switch; return whether it changed."""
        values = {"paused": int(paused), "changed_at": utcnow(), "changed_by": by}
        with begin_write(self.engine) as conn:
            row = conn.execute(
                select(t.source_schedule.c.paused)
                .where(t.source_schedule.c.source_id == source_id)
                .with_for_update()
            ).first()
            if row is None:
                conn.execute(insert(t.source_schedule).values(source_id=source_id, **values))
                return paused
            if bool(row[0]) == paused:
                return False
            conn.execute(
                update(t.source_schedule)
                .where(t.source_schedule.c.source_id == source_id)
                .values(**values)
            )
            return True

    # -- permission syncs ----------------------------------------------------------------

    def permissions_done(self) -> dict[str, datetime]:
        """When the scheduler last ran each source's permission sync."""
        c = t.source_schedule.c
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(c.source_id, c.last_permissions_at).where(c.last_permissions_at.is_not(None))
            )
            return {r.source_id: as_utc(r.last_permissions_at) for r in rows}

    def set_permissions_done(self, source_id: str, moment: datetime) -> None:
        """Record a permission sync of ``source_id`` (a row, not paused, if none yet)."""
        c = t.source_schedule.c
        with begin_write(self.engine) as conn:
            found = conn.execute(
                select(c.source_id).where(c.source_id == source_id).with_for_update()
            ).first()
            if found is None:
                conn.execute(
                    insert(t.source_schedule).values(
                        source_id=source_id,
                        paused=0,
                        changed_at=moment,
                        changed_by=None,
                        last_permissions_at=moment,
                    )
                )
            else:
                conn.execute(
                    update(t.source_schedule)
                    .where(c.source_id == source_id)
                    .values(last_permissions_at=moment)
                )

    # -- run records ---------------------------------------------------------------------

    def annotate(self, run_id: str, owner: str, kind: str, fetched: int | None) -> None:
        """Record who ran (or last resumed) a run, why, and what it fetched."""
        with begin_write(self.engine) as conn:
            conn.execute(
                update(t.runs)
                .where(t.runs.c.run_id == run_id)
                .values(owner=owner, kind=kind, fetched=fetched)
            )

    def purge_runs(self, older_than: datetime) -> int:
        """Drop finished runs started before ``older_than`` (and their checkpoints and lists).

        A source's newest run is always kept: the next run's window starts where the last
        successful one ended, and that record carries it.
        """
        with begin_write(self.engine) as conn:
            keep = _newest_successful(conn)
            old = [
                r[0]
                for r in conn.execute(
                    select(t.runs.c.run_id).where(
                        t.runs.c.started_at < older_than, t.runs.c.status != RUNNING
                    )
                )
                if r[0] not in keep
            ]
            for start in range(0, len(old), 500):
                part = old[start : start + 500]
                # A process that died between finishing a run and clearing its lists
                # left them behind: they go with the run.
                for table in (t.checkpoints, t.enumerations, t.seen_batches, t.unseen_documents):
                    conn.execute(delete(table).where(table.c.run_id.in_(part)))
                conn.execute(delete(t.runs).where(t.runs.c.run_id.in_(part)))
        return len(old)

    def list_runs(
        self, source_id: str | None = None, status: str | None = None, limit: int = 20
    ) -> list[dict[str, Any]]:
        """Runs, newest first, as ``headwater runs --json`` shows them."""
        query = select(t.runs).order_by(desc(t.runs.c.started_at)).limit(limit)
        if source_id:
            query = query.where(t.runs.c.source_id == source_id)
        if status:
            query = query.where(t.runs.c.status == status)
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()
            leases = {r.source_id: r.owner for r in conn.execute(select(t.leases))}
            short = _short_ids(conn, [r.run_id for r in rows])
        return [run_dict(r, leases, short) for r in rows]

    def get_run(self, run_id: str) -> dict[str, Any] | None:
        """The run ``run_id`` names: its full id, or a unique prefix of one (at least
        ``MIN_PREFIX`` characters, as git takes commits); None when nothing matches. An
        ambiguous prefix is a ``ConfigError`` (exit code 2) listing the candidates."""
        with self.engine.connect() as conn:
            row = conn.execute(select(t.runs).where(t.runs.c.run_id == run_id)).first()
            if row is None and len(run_id) >= MIN_PREFIX:
                matches = conn.execute(
                    select(t.runs)
                    .where(t.runs.c.run_id.startswith(run_id, autoescape=True))
                    .order_by(desc(t.runs.c.started_at))
                    .limit(CANDIDATES_SHOWN + 1)
                ).all()
                if len(matches) > 1:
                    raise _ambiguous(run_id, matches)
                row = matches[0] if matches else None
            leases = {r.source_id: r.owner for r in conn.execute(select(t.leases))}
            short = _short_ids(conn, [row.run_id]) if row is not None else {}
        return run_dict(row, leases, short) if row is not None else None


def _newest_successful(conn: Any) -> set[str]:
    """The run id of each source's newest run and newest successful run."""
    keep: set[str] = set()
    seen_any: set[str] = set()
    seen_ok: set[str] = set()
    rows = conn.execute(
        select(t.runs.c.run_id, t.runs.c.source_id, t.runs.c.status).order_by(
            desc(t.runs.c.started_at)
        )
    )
    for row in rows:
        if row.source_id not in seen_any:
            seen_any.add(row.source_id)
            keep.add(row.run_id)
        if row.source_id not in seen_ok and row.status in ("succeeded", "completed_with_errors"):
            seen_ok.add(row.source_id)
            keep.add(row.run_id)
    return keep


def _short_ids(conn: Any, run_ids: list[str]) -> dict[str, str]:
    """Each run id's shortest prefix of at least ``SHORT_ID`` characters that no other
    run in the manifest shares: what ``headwater runs`` and the admin page show, and
    what ``runs show`` takes back."""
    heads = sorted({run_id[:SHORT_ID] for run_id in run_ids})
    others: list[str] = []
    for start in range(0, len(heads), 500):
        part = heads[start : start + 500]
        others += [
            r[0]
            for r in conn.execute(
                select(t.runs.c.run_id).where(t.short_run_id(t.runs.c.run_id).in_(part))
            )
        ]
    short: dict[str, str] = {}
    for run_id in run_ids:
        rivals = [o for o in others if o != run_id and o[:SHORT_ID] == run_id[:SHORT_ID]]
        length = SHORT_ID
        while length < len(run_id) and any(o[:length] == run_id[:length] for o in rivals):
            length += 1
        short[run_id] = run_id[:length]
    return short


def _ambiguous(prefix: str, matches: Sequence[Any]) -> ConfigError:
    shown = [f"{m.run_id} ({m.source_id}, {iso(m.started_at)})" for m in matches]
    more = ", …" if len(shown) > CANDIDATES_SHOWN else ""
    return ConfigError(
        f"run id prefix {prefix!r} is ambiguous; it matches "
        f"{', '.join(shown[:CANDIDATES_SHOWN])}{more}. Give more of the id."
    )


def run_dict(
    row: Any, leases: dict[str, str], short: dict[str, str] | None = None
) -> dict[str, Any]:
    """One run as ``headwater runs --json`` shows it; ``short_id`` is the prefix the
    tables show (``short`` maps run ids to it; the first ``SHORT_ID`` characters else)."""
    record = RunRecord.from_row(row)
    owner = row._mapping["owner"]
    if record.status == RUNNING and record.source_id in leases:
        owner = leases[record.source_id]  # the process holding it now
    return {
        "run_id": record.run_id,
        "short_id": (short or {}).get(record.run_id, record.run_id[:SHORT_ID]),
        "source": record.source_id,
        "kind": row._mapping["kind"] or "sync",
        "status": record.status,
        "owner": owner,
        "started_at": iso(record.started_at),
        "finished_at": iso(record.finished_at),
        "duration_s": round(record.duration_s, 3),
        "phases": record.phases,
        "window": {"start": iso(record.window_start), "end": iso(record.window_end)},
        "counts": record.counts.as_dict(),
        "fetched": row._mapping["fetched"],
        "error": record.error,
        "resumed": record.attempts > 1,
    }
