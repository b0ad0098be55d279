"""Reading ``documents`` rows by object id, a bounded part at a time.

The sync gates decide a batch of items from the rows of their object ids: one query per
part of ``CHUNK`` ids (an index lookup each on ``(source_id, object_id)``), built once
with an expanding parameter so no id is coerced into a new statement, and each part
fetched at once. A no-op re-sync of a million objects is two thousand such queries, not a
million.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from sqlalchemy import Engine, bindparam, select

from headwater.manifest import schema as t
from headwater.manifest.prunes import CHUNK


def chunked(items: Sequence[str], size: int = CHUNK) -> Iterator[Sequence[str]]:
    """``items`` in consecutive slices of at most ``size``."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def rows_by_object_ids(
    engine: Engine, source_id: str, object_ids: Sequence[str], columns: Sequence[str]
) -> Iterator[Sequence[Any]]:
    """The ``columns`` of the rows of these object ids in ``source_id``, in parts."""
    docs = t.documents.c
    query = select(*(docs[name] for name in columns)).where(
        docs.source_id == source_id, docs.object_id.in_(bindparam("ids", expanding=True))
    )
    with engine.connect() as conn:
        for part in chunked(list(object_ids)):
            yield from conn.execute(query, {"ids": list(part)}).all()
