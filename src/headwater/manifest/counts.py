"""Document counts kept by the database, so ``status`` costs the same at 10M documents.

Triggers on ``documents`` and ``document_indexes`` (migration 0020) add each change to
``document_counts`` in the writer's own transaction: per source and state, the documents;
per index and pipeline version, the index rows of active documents at their revision
(``applied``); per index, the index rows of deleted documents below their tombstone's
revision (``stale``). An index's pending work is ``active - applied + stale``, the same
set ``IndexState.pending`` selects, read from a few rows instead of a join of every
document. On SQLite the triggers add to one row per key. On PostgreSQL each change appends
a row of its own (no two writers wait on one counter row); a reader sums them, and writers
(every ``FOLD_EVERY`` batches) and readers (past ``FOLD_AT`` rows) fold them into
``tx = 0``, one folder at a time. The triggers classify a document's index rows under an
advisory lock of its source; writers that touch several sources take those locks up
front in one order (``lock_sources``), so none deadlock.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import DBAPIError

from headwater.manifest.db import begin_write
from headwater.manifest.records import ACTIVE

LOCK_SPACE = 0x48574443  # the triggers' advisory lock space (migration 0020)
FOLD_LOCK = 0x48574446  # "HWDF": one folder at a time
FOLD_AT = 2_000  # unfolded rows a reader tolerates before it folds them
FOLD_EVERY = 64  # a writer folds after every so many of its write transactions

Totals = dict[tuple[str, str, str], int]

FOLD = (
    "WITH moved AS (DELETE FROM document_counts WHERE tx <> 0 "
    "RETURNING kind, scope, detail, value) "
    "INSERT INTO document_counts (kind, scope, detail, tx, value) "
    "SELECT kind, scope, detail, 0, SUM(value) FROM moved GROUP BY kind, scope, detail "
    "ON CONFLICT (kind, scope, detail, tx) "
    "DO UPDATE SET value = document_counts.value + excluded.value"
)


def _lock(conn: Connection, keys_sql: str, params: dict[str, object], shared: bool) -> None:
    if conn.dialect.name != "postgresql":
        return
    mode = "_shared" if shared else ""
    conn.execute(
        text(
            f"SELECT COUNT(pg_advisory_xact_lock{mode}(:space, k)) FROM ("
            f"SELECT DISTINCT hashtext(s) AS k FROM ({keys_sql}) AS src (s) ORDER BY k) AS keys"
        ),
        {"space": LOCK_SPACE, **params},
    )


def lock_sources(conn: Connection, source_ids: Iterable[str], *, shared: bool) -> None:
    """Take the triggers' advisory locks of these sources now, in lock-key order (a no-op
    on SQLite, whose writers are serialized anyway): exclusive before changing documents'
    revisions or states, shared before writing index rows. The triggers then find them
    held, so writers that lock several sources cannot deadlock on them."""
    ids = sorted(set(source_ids))
    if ids:
        _lock(conn, "SELECT unnest(CAST(:ids AS text[]))", {"ids": ids}, shared)


def lock_sources_of(conn: Connection, document_ids: Sequence[str], *, shared: bool) -> None:
    """``lock_sources`` for the sources of these documents."""
    if document_ids:
        _lock(
            conn,
            "SELECT source_id FROM documents WHERE document_id = ANY(CAST(:ids AS text[]))",
            {"ids": list(document_ids)},
            shared,
        )


class DocumentCounts:
    """Reads ``document_counts``: documents per source and state, pending per index."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._writes = 0

    def note_write(self) -> None:
        """Called after each committed write batch: every ``FOLD_EVERY``-th one folds, so
        the rows a reader sums stay about as many as the last few dozen batches wrote."""
        self._writes += 1
        if self._writes % FOLD_EVERY or self.engine.dialect.name != "postgresql":
            return
        try:
            self.fold()
        except DBAPIError:
            # Housekeeping after a committed write: the rows still sum right unfolded, and
            # the next fold (a writer's or a reader's) takes them; the write succeeded.
            return

    def totals(self, kind: str | None = None) -> Totals:
        """Every count (of ``kind``), its transactions' rows summed; folds them when many."""
        where = "WHERE kind = :kind" if kind else ""
        with self.engine.connect() as conn:
            rows = conn.execute(
                text(
                    "SELECT kind, scope, detail, SUM(value), COUNT(*) FROM document_counts "
                    f"{where} GROUP BY kind, scope, detail"
                ),
                {"kind": kind} if kind else {},
            ).all()
        if sum(int(r[4]) for r in rows) - len(rows) > FOLD_AT:
            self.fold()
        return {(r[0], r[1], r[2]): int(r[3]) for r in rows}

    def fold(self) -> None:
        """Sum the transactions' rows into ``tx = 0`` rows (PostgreSQL; one folder at a
        time: another one running means this one has nothing to do)."""
        if self.engine.dialect.name != "postgresql":
            return  # SQLite's triggers keep one row per key already
        with begin_write(self.engine) as conn:
            took = conn.execute(text("SELECT pg_try_advisory_xact_lock(:k)"), {"k": FOLD_LOCK})
            if not took.scalar_one():
                return
            conn.execute(text(FOLD))
            conn.execute(text("DELETE FROM document_counts WHERE tx = 0 AND value = 0"))

    def documents(self, source_id: str, state: str = ACTIVE) -> int:
        """How many documents of ``source_id`` are in ``state``."""
        with self.engine.connect() as conn:
            value = conn.execute(
                text(
                    "SELECT SUM(value) FROM document_counts "
                    "WHERE kind = 'docs' AND scope = :source AND detail = :state"
                ),
                {"source": source_id, "state": state},
            ).scalar()
        return int(value or 0)

    def active(self) -> int:
        """Active documents of every source."""
        return sum(v for (_, _, state), v in self.totals("docs").items() if state == ACTIVE)

    def sources_with_active(self) -> list[str]:
        """The sources holding at least one active document, sorted."""
        totals = self.totals("docs")
        return sorted(src for (_, src, state), v in totals.items() if state == ACTIVE and v > 0)

    def pending(self, index_name: str, index_version: str) -> int:
        """How many documents the index must still apply: active ones not applied at
        their revision and version, plus deleted ones whose delete it has not applied."""
        totals = self.totals()
        active = sum(
            v for (kind, _, state), v in totals.items() if (kind, state) == ("docs", ACTIVE)
        )
        applied = totals.get(("applied", index_name, index_version), 0)
        stale = totals.get(("stale", index_name, ""), 0)
        return active - applied + stale
