"""A replace's chunk rows: which rows it keeps, which it adds, and writing them.

A chunk the document already held keeps its rowid (shared by ``chunks``, ``vectors`` and
``fts``) and is updated in place; a new chunk gets the next free rowid. ``plan_rows`` is
the pure decision, ``write_rows`` the four statements that carry it out inside the
caller's transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from headwater.sinks.sqlite._driver import Database
from headwater.types import EmbeddedChunk, IndexDocument


@dataclass
class RowPlan:
    """The rows of one replace: updated in place, inserted, and every chunk's rowid."""

    kept: list[tuple[Any, ...]] = field(default_factory=list)  # values..., rowid, blob
    fresh: list[tuple[Any, ...]] = field(default_factory=list)  # rowid, values..., blob
    ids: list[int] = field(default_factory=list)  # in the order of the chunks


def plan_rows(
    document: IndexDocument,
    chunks: Sequence[EmbeddedChunk],
    blobs: Sequence[bytes],
    old: dict[str, int],
    next_id: int,
    acl: str,
    src: str,
) -> RowPlan:
    """The rows of ``chunks`` (with their vector ``blobs``), given the document's ``old``
    rowids by chunk id and the first free rowid ``next_id``."""
    plan = RowPlan()
    for item, blob in zip(chunks, blobs, strict=True):
        c = item.chunk
        values = (c.ordinal, document.source, document.title, document.locator, c.text)
        rowid = old.get(c.chunk_id)
        if rowid is None:
            plan.fresh.append((next_id, c.chunk_id, document.document_id, *values, acl, src, blob))
            plan.ids.append(next_id)
            next_id += 1
        else:
            plan.kept.append((*values, acl, src, rowid, blob))
            plan.ids.append(rowid)
    return plan


def write_rows(db: Database, plan: RowPlan) -> None:
    """Update the kept rows and insert the fresh ones, in ``chunks`` and ``vectors``."""
    kept, fresh = plan.kept, plan.fresh
    db.executemany(
        "UPDATE chunks SET ordinal = ?, source = ?, title = ?, locator = ?, text = ?, "
        "acl = ?, src = ? WHERE id = ?",
        [row[:-1] for row in kept],
    )
    db.executemany("UPDATE vectors SET embedding = ? WHERE id = ?", [(r[-1], r[-2]) for r in kept])
    db.executemany(
        "INSERT INTO chunks (id, chunk_id, document_id, ordinal, source, title, locator, "
        "text, acl, src) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [row[:-1] for row in fresh],
    )
    db.executemany(
        "INSERT INTO vectors (id, embedding) VALUES (?, ?)",
        [(r[0], r[-1]) for r in fresh],
    )
