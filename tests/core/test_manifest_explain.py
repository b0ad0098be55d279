"""The hot manifest queries use an index on PostgreSQL (issue 29, goal 5).

A fresh PostgreSQL manifest is filled by bulk INSERT (40,000 documents over 10 sources,
half of them deleted and tombstoned, the active ones' index rows, 20,000 runs and 20,000
failure records, most resolved) and analyzed. Each hot read is called for real, the SQL
it sends is captured with a ``before_cursor_execute`` listener, and that statement is
EXPLAINed with its own parameters: no plan may hold a ``Seq Scan`` on a big table.

No statement may read a whole big table: ``status``'s pending count per index, which
joined every document to its index row, now reads the maintained ``document_counts``
(migration 0020), and so do its per-source counts and its list of sources holding
documents. The admin chart sampler's "index rows applied since the last sample" uses
``ix_document_indexes_applied_at``. A fill made through the triggers proves the counts
match the tables (``test_the_fill_is_what_the_plans_were_judged_on``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any
from unittest.mock import patch

import pytest
from sqlalchemy import event, func, select, text

from headwater.clock import utcnow
from headwater.manifest import schema
from headwater.manifest.driver_sql import DriverStatement
from headwater.manifest.schedule import ScheduleStore
from headwater.manifest.store import Manifest
from headwater.reports import IndexInfo, status_report
from pg_support import create_pg_database

BIG_TABLES = ("documents", "document_indexes", "tombstones", "failures", "runs")
N = 20_000
DOCS = 2 * N

FILL = [
    "INSERT INTO sources (source_id, type, created_at) "
    "SELECT 'src' || g, 'filesystem', now() FROM generate_series(0, 9) g",
    "INSERT INTO documents SELECT md5('d' || g) || md5('e' || g), 'src' || (g % 10), "
    "'obj/' || g, 'file:///obj/' || g, 'title ' || g, 'text/plain', 'v' || g, "
    "md5('c' || g) || md5('f' || g), NULL, 'pv1', 1 + g % 3, NULL, "
    "CASE WHEN g % 2 = 0 THEN 'deleted' ELSE 'active' END, "
    "'[\"group:staff\"]', '{}', NULL, now(), now() FROM generate_series(1, :docs) g",
    "INSERT INTO document_indexes SELECT document_id, 'main', "
    "CASE WHEN abs(hashtext(document_id)) % 7 = 0 THEN revision - 1 ELSE revision END, NULL, "
    "'pv1', 1, "
    "now() - (abs(hashtext(document_id)) % 864000) * interval '1 second' "
    "FROM documents WHERE state = 'active'",
    "INSERT INTO tombstones SELECT document_id, source_id, object_id, revision, NULL, "
    "'pruned', now(), now() FROM documents WHERE state = 'deleted'",
    "INSERT INTO runs (run_id, source_id, status, window_end, started_at, finished_at, seen, "
    "new, changed, unchanged, deleted, failed, stale, duration_s, attempts) "
    "SELECT (md5('r' || g))::uuid::text, 'src' || (g % 10), 'succeeded', now(), "
    "now() - g * interval '1 minute', now(), 0, 0, 0, 0, 0, 0, 0, 0.0, 1 "
    "FROM generate_series(1, :n) g",
    "INSERT INTO failures (source_id, object_id, document_id, locator, stage, error_class, "
    "message, pipeline_version, attempts, permanent, status, priority, first_failed_at, "
    "last_failed_at) SELECT 'src' || (g % 10), 'obj/' || g, md5('d' || g) || md5('e' || g), "
    "'file:///obj/' || g, CASE WHEN g % 3 = 0 THEN 'fetch' ELSE 'parse' END, 'boom', 'm', "
    "'pv1', 1, 0, CASE WHEN g % 100 = 0 THEN 'dead' WHEN g % 50 = 0 THEN 'retrying' "
    "ELSE 'resolved' END, 0, now(), now() FROM generate_series(1, :n) g",
]


def doc_id(g: int) -> str:
    """The document id the fill gave row ``g`` (md5('d'||g) || md5('e'||g))."""
    import hashlib

    return hashlib.md5(f"d{g}".encode()).hexdigest() + hashlib.md5(f"e{g}".encode()).hexdigest()


@pytest.fixture(scope="module")
def manifest(postgres_server_url: str) -> Iterator[Manifest]:
    url, drop = create_pg_database(postgres_server_url)
    manifest = Manifest.open(url)
    try:
        with manifest.engine.begin() as conn:
            for statement in FILL:
                conn.execute(text(statement), {"n": N, "docs": DOCS})
        with manifest.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text("VACUUM ANALYZE"))
        yield manifest
    finally:
        manifest.close()
        drop()


def plans_of(manifest: Manifest, call: Callable[[], Any]) -> list[tuple[str, str]]:
    """Run ``call`` for real; EXPLAIN every statement it sent, with its parameters."""
    sent: list[tuple[str, Any]] = []

    def grab(conn: Any, cursor: Any, statement: str, params: Any, *rest: Any) -> None:
        sent.append((statement, params))

    read = DriverStatement.read

    def read_and_grab(self: DriverStatement, engine: Any, values: Any) -> Any:
        # a read on the driver's own connection passes no SQLAlchemy event
        if self.sql is not None:
            sent.append((self.sql, self._params(values)))
        return read(self, engine, values)

    event.listen(manifest.engine, "before_cursor_execute", grab)
    try:
        with patch.object(DriverStatement, "read", read_and_grab):
            call()
    finally:
        event.remove(manifest.engine, "before_cursor_execute", grab)
    assert sent, "the call sent no SQL"
    plans = []
    with manifest.engine.connect() as conn:
        for statement, params in sent:
            rows = conn.exec_driver_sql("EXPLAIN " + statement, params).all()
            plans.append((statement, "\n".join(r[0] for r in rows)))
    return plans


def full_scans(plan: str) -> list[str]:
    return [
        t for t in BIG_TABLES if f"Seq Scan on {t} " in plan or plan.endswith(f"Seq Scan on {t}")
    ]


ACTIVE_IDS = [doc_id(g) for g in range(1, 1000, 10)][:50]  # odd g: active
DELETED_IDS = [doc_id(g) for g in range(2, 1000, 10)][:50]  # even g: tombstoned
OBJECTS = [f"obj/{g}" for g in range(1, 1000, 10)][:50]  # of src1
CALLS: dict[str, Callable[[Manifest], Any]] = {
    "status": lambda m: status_report(
        m,
        [(f"src{i}", "filesystem") for i in range(10)],
        {},
        [IndexInfo("main", "sqlite", "pv1", live_key="main", live_version="pv1")],
        pipeline_version="pv1",
        content_version="c1",
    ),
    "search gate (visible_to)": lambda m: m.visible_to(ACTIVE_IDS, ["group:staff"]),
    "documents_by_object_ids": lambda m: m.documents_by_object_ids("src1", OBJECTS),
    "documents_by_ids": lambda m: m.documents_by_ids(ACTIVE_IDS),
    "dead_source_versions": lambda m: m.failures.dead_source_versions(ACTIVE_IDS),
    "dead_source_versions (probed)": lambda m: m.failures.dead_source_versions(ACTIVE_IDS, "src1"),
    "tombstone_sequences": lambda m: m.tombstone_sequences(DELETED_IDS),
    "runs": lambda m: ScheduleStore(m.engine).list_runs(),
    "runs of a source": lambda m: ScheduleStore(m.engine).list_runs("src3"),
    "runs (recent)": lambda m: m.runs.recent(),
    "failures": lambda m: m.failures.list(),
    "failures of a source": lambda m: m.failures.list(source_id="src3"),
    "pending count": lambda m: m.index_state.pending_count("main", "pv1"),
    "chart sampler (applied since)": lambda m: sampler_query(m),
}


def sampler_query(m: Manifest) -> list[Any]:
    """The admin chart sampler's query (``api/samples.py``): chunks applied since the last
    sample, per index, every 30 s."""
    di = schema.document_indexes.c
    since = utcnow() - timedelta(seconds=30)
    with m.engine.connect() as conn:
        return conn.execute(
            select(di.index_name, func.coalesce(func.sum(di.chunks), 0))
            .where(di.applied_at > since)
            .group_by(di.index_name)
        ).all()


@pytest.mark.parametrize("name", list(CALLS))
def test_hot_query_uses_an_index(manifest: Manifest, name: str) -> None:
    plans = plans_of(manifest, lambda: CALLS[name](manifest))
    scanned = []
    for statement, plan in plans:
        if full_scans(plan):
            scanned.append(f"{' '.join(statement.split())[:300]}\n{plan}")
    assert not scanned, "\n\n".join(scanned)


def test_the_fill_is_what_the_plans_were_judged_on(manifest: Manifest) -> None:
    """The gate's answer proves the ids the calls use exist (active ones visible to the
    group, tombstoned ones not), so an index scan over nothing cannot pass for one."""
    assert manifest.visible_to(ACTIVE_IDS, ["group:staff"]) == set(ACTIVE_IDS)
    assert manifest.visible_to(DELETED_IDS, ["group:staff"]) == set()
    assert len(manifest.tombstone_sequences(DELETED_IDS)) == len(DELETED_IDS)
    assert len(manifest.documents_by_object_ids("src1", OBJECTS)) == len(OBJECTS)
    assert (
        manifest.count_documents("src1") + manifest.count_documents("src1", "deleted") == DOCS // 10
    )
    with manifest.engine.connect() as conn:
        sizes = {
            t: conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one() for t in BIG_TABLES
        }
    assert sizes == {
        "documents": DOCS, "document_indexes": N, "tombstones": N,
        "failures": N, "runs": N,
    }  # fmt: skip
    # The maintained counts the status calls read match the tables they count.
    behind = len(manifest.index_state.pending("main", "pv1", limit=DOCS))
    assert 0 < behind < N and manifest.index_state.pending_count("main", "pv1") == behind
    assert manifest.index_state.pending_count("main", "pv2") == N
    with manifest.engine.connect() as conn:
        src1 = conn.execute(
            text("SELECT count(*) FROM documents WHERE source_id = 'src1' AND state = 'active'")
        ).scalar_one()
    assert manifest.count_documents("src1") == src1 > 0
