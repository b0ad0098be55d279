"""Heartbeats and persisted counters (``manifest/liveness.py``), on SQLite and PostgreSQL.

``runs_total`` is bumped when a run ends, once per run, and pruning the run history
(housekeeping) never lowers it. A heartbeat row is alive until it ages past
``ALIVE_FOR`` and is gone once its process stops cleanly. Migration 0013 seeds the
counter from the runs an upgraded manifest still holds.
"""

from __future__ import annotations

from datetime import timedelta

from alembic import command
from alembic.config import Config
from sqlalchemy import insert

from headwater.clock import utcnow
from headwater.manifest import schema as t
from headwater.manifest.db import MIGRATIONS, create_manifest_engine
from headwater.manifest.liveness import ALIVE_FOR, RUNS_TOTAL, SCHEDULER, Heartbeat
from headwater.manifest.records import RunCounts
from headwater.manifest.runs import COMPLETED_WITH_ERRORS, FAILED, SUCCEEDED
from headwater.manifest.schedule import ScheduleStore
from headwater.manifest.store import Manifest


def test_runs_total_counts_each_end_once_and_survives_pruning(manifest_url: str) -> None:
    manifest = Manifest.open(manifest_url)
    try:
        manifest.ensure_source("docs", "filesystem")
        ends = [SUCCEEDED, FAILED, SUCCEEDED, COMPLETED_WITH_ERRORS]
        for status in ends:
            run_id = manifest.runs.start("docs", None, utcnow())
            manifest.runs.finish(run_id, status, RunCounts(), 0.1)
        manifest.runs.finish(run_id, FAILED, RunCounts(), 0.2)  # a second end: not counted
        before = manifest.liveness.counter(RUNS_TOTAL)
        assert before == {
            "docs|succeeded": 2,
            "docs|failed": 1,
            "docs|completed_with_errors": 1,
        }
        dropped = ScheduleStore(manifest.engine).purge_runs(utcnow() + timedelta(days=1))
        assert dropped >= 2  # history shrank ...
        assert manifest.liveness.counter(RUNS_TOTAL) == before  # ... the counter did not
        run_id = manifest.runs.start("docs", None, utcnow())
        manifest.runs.finish(run_id, SUCCEEDED, RunCounts(), 0.1)
        assert manifest.liveness.counter(RUNS_TOTAL)["docs|succeeded"] == 3
    finally:
        manifest.engine.dispose()


def test_heartbeats_show_live_processes_and_forget_stopped_ones(manifest_url: str) -> None:
    manifest = Manifest.open(manifest_url)
    try:
        beat = Heartbeat(lambda: manifest.engine, "host:1:x:ab", SCHEDULER, every_s=0.05).start()
        (alive,) = manifest.liveness.alive()
        assert alive.owner == "host:1:x:ab" and alive.role == SCHEDULER
        first_seen = alive.seen_at
        deadline = utcnow() + timedelta(seconds=10)
        while manifest.liveness.alive()[0].seen_at == first_seen:  # the timer beats again
            assert utcnow() < deadline, "the heartbeat thread never beat again"
        # Seen from the future, a row older than ALIVE_FOR is a process that is gone.
        assert manifest.liveness.alive(utcnow() + ALIVE_FOR + timedelta(seconds=1)) == []
        beat.stop()
        assert manifest.liveness.alive() == []
    finally:
        manifest.engine.dispose()


def test_migration_0013_seeds_runs_total_from_the_kept_history(manifest_url: str) -> None:
    engine = create_manifest_engine(manifest_url)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "0010")
    now = utcnow()
    with engine.begin() as conn:
        conn.execute(insert(t.sources).values(source_id="a", type="filesystem", created_at=now))
        for i, status in enumerate([SUCCEEDED, SUCCEEDED, FAILED, "running"]):
            conn.execute(
                insert(t.runs).values(
                    run_id=f"run-{i}", source_id="a", status=status, window_end=now,
                    started_at=now, duration_s=0.0, seen=0, new=0, changed=0, unchanged=0,
                    deleted=0, failed=0, stale=0, attempts=1,
                )
            )  # fmt: skip
    engine.dispose()
    manifest = Manifest.open(manifest_url)  # migrates to head
    try:
        assert manifest.liveness.counter(RUNS_TOTAL) == {"a|succeeded": 2, "a|failed": 1}
    finally:
        manifest.engine.dispose()
