"""What a prune compares: a run's stored enumeration, and the documents it did not see.

An enumeration (every object id a connector listed) is stored per run in batches, so
memory stays bounded. A complete read proves presence without writing the rows it found
unchanged: each batch stores their object ids as one sorted JSON array
(``seen_batches``), and a row the batch writes carries ``last_seen_run``. After the read,
one statement collects the source's active documents that neither proof names
(``unseen_documents``; an anti-join the database runs, spilling to disk rather than
growing this process; sorted lists let SQLite build and probe its ephemeral index nearly
in order, 0.9 s at 1M objects against 7 s for document ids in hash order). The prune
candidates of a run are those (after a complete read) or the active documents its
enumeration did not list; they are counted in one query and read in keyset pages by
document_id, never held whole. A run's lists are cleared when it finishes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from sqlalchemy import (
    JSON,
    Engine,
    Select,
    cast,
    delete,
    exists,
    func,
    insert,
    literal,
    select,
    true,
)

from headwater.manifest import schema as t
from headwater.manifest.db import begin_write
from headwater.manifest.records import ACTIVE, DocumentRecord

CHUNK = 500  # rows per query: a page of candidates, an IN list (manifest.store.chunked)


class PruneLedger:
    """The enumerations table, and the queries that pick a prune's candidates."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def record_enumeration(self, run_id: str, object_ids: Iterable[str]) -> int:
        """Store a full enumeration in batches (bounded memory); returns the count."""
        total = 0
        batch: list[str] = []
        with begin_write(self.engine) as conn:
            conn.execute(delete(t.enumerations).where(t.enumerations.c.run_id == run_id))
        for object_id in object_ids:
            batch.append(object_id)
            if len(batch) >= CHUNK:
                total += self._insert_enumerated(run_id, batch)
                batch = []
        if batch:
            total += self._insert_enumerated(run_id, batch)
        return total

    def _insert_enumerated(self, run_id: str, batch: list[str]) -> int:
        unique = sorted(set(batch))
        with begin_write(self.engine) as conn:
            existing = {
                r[0]
                for r in conn.execute(
                    select(t.enumerations.c.object_id).where(
                        t.enumerations.c.run_id == run_id, t.enumerations.c.object_id.in_(unique)
                    )
                )
            }
            fresh = [{"run_id": run_id, "object_id": o} for o in unique if o not in existing]
            if fresh:
                conn.execute(insert(t.enumerations), fresh)
        return len(unique)

    def collect_unseen(self, source_id: str, run_id: str) -> int:
        """Store the source's active documents that run ``run_id``'s complete read did not
        see (no batch listed them, none wrote them) as its prune candidates; their count."""
        docs = t.documents.c
        unseen = t.unseen_documents
        dialect = self.engine.dialect.name
        listed = _seen_ids(run_id, dialect)
        if dialect == "sqlite":  # one ephemeral index of the listed ids, built nearly in order
            not_listed: Any = docs.object_id.not_in(listed)
        else:  # a hash anti-join; NOT IN would rescan the list per row past work_mem
            not_listed = ~exists(listed.where(listed.selected_columns[0] == docs.object_id))
        missing = (
            select(literal(run_id), docs.document_id)
            .where(docs.source_id == source_id, docs.state == ACTIVE)
            .where((docs.last_seen_run.is_(None)) | (docs.last_seen_run != run_id))
            .where(not_listed)
        )
        with begin_write(self.engine) as conn:
            conn.execute(delete(unseen).where(unseen.c.run_id == run_id))
            conn.execute(
                insert(unseen).from_select([unseen.c.run_id, unseen.c.document_id], missing)
            )
            count = conn.execute(select(func.count()).where(unseen.c.run_id == run_id)).scalar_one()
        return int(count)

    def _prune_condition(self, source_id: str, run_id: str, by_enumeration: bool) -> Any:
        """Active documents of a source that ``run_id`` did not list (by enumeration), or
        that ``collect_unseen`` found it did not see."""
        docs = t.documents.c
        missing: Any
        if by_enumeration:
            listed = select(t.enumerations.c.object_id).where(t.enumerations.c.run_id == run_id)
            missing = docs.object_id.not_in(listed)
        else:
            unseen = t.unseen_documents.c
            missing = docs.document_id.in_(
                select(unseen.document_id).where(unseen.run_id == run_id)
            )
        return (docs.source_id == source_id) & (docs.state == ACTIVE) & missing

    def count_prune_candidates(self, source_id: str, run_id: str, *, by_enumeration: bool) -> int:
        """How many documents a prune after ``run_id`` would delete (one COUNT query)."""
        condition = self._prune_condition(source_id, run_id, by_enumeration)
        with self.engine.connect() as conn:
            return int(conn.execute(select(func.count()).where(condition)).scalar_one())

    def prune_candidates(
        self,
        source_id: str,
        run_id: str,
        *,
        by_enumeration: bool,
        after: str = "",
        limit: int = CHUNK,
    ) -> list[DocumentRecord]:
        """One page of prune candidates in document_id order after ``after`` (keyset)."""
        condition = self._prune_condition(source_id, run_id, by_enumeration)
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(t.documents)
                .where(condition, t.documents.c.document_id > after)
                .order_by(t.documents.c.document_id)
                .limit(limit)
            )
            return [DocumentRecord.from_row(r) for r in rows]

    def iter_prune_candidates(
        self, source_id: str, run_id: str, *, by_enumeration: bool, page: int = CHUNK
    ) -> Iterator[list[DocumentRecord]]:
        """Every prune candidate, a page at a time; never the whole list in memory."""
        after = ""
        while True:
            batch = self.prune_candidates(
                source_id, run_id, by_enumeration=by_enumeration, after=after, limit=page
            )
            if not batch:
                return
            yield batch
            after = batch[-1].document_id

    def clear_run_lists(self, run_id: str) -> None:
        """Delete the enumeration, seen lists and unseen documents stored for ``run_id``."""
        with begin_write(self.engine) as conn:
            for table in (t.enumerations, t.seen_batches, t.unseen_documents):
                conn.execute(delete(table).where(table.c.run_id == run_id))


def _seen_ids(run_id: str, dialect: str) -> Select[Any]:
    """Every object id the batches of ``run_id`` listed unchanged, one per row."""
    seen = t.seen_batches.c
    if dialect == "sqlite":
        each = func.json_each(seen.object_ids).table_valued("value")
    else:
        each = func.json_array_elements_text(cast(seen.object_ids, JSON)).table_valued("value")
    listed = t.seen_batches.join(each, true())  # each row's array, beside its row
    return select(each.c.value).select_from(listed).where(seen.run_id == run_id)
