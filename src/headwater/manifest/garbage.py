"""Content-store garbage: stored content no active document points at any more.

Every reader of the content store goes through a document's *current* checksum: the
indexer of every generation (building, live, previous after a rollback), a rebuild's
verification sample, and a DLQ redrive (it re-applies the document as it is now). A
deleted document needs no content (its delete is chunk removal), and one that comes
back is parsed anew. So an object is garbage when no active document's checksum names
it. Two rules keep the walk safe while syncs run beside it: an object younger than
``min_age`` (an hour) is never deleted, because content is stored before the manifest
row that points at it is committed (a fresh orphan may be a commit in flight, and a put
of an existing object refreshes its mtime); and each file's age is read *after* the
manifest was asked, just before it is unlinked.

The walk streams: one prefix (the first two hex digits) at a time, one range query on
``ix_documents_checksum`` per prefix, so memory holds one 256th of the checksums, never
the whole manifest's. It sees the store only through ``ContentStore``'s listing calls,
so a folder and an S3 bucket are walked alike (an S3 object's age is its LastModified).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine, select

from headwater.clock import utcnow
from headwater.jsonview import JsonView
from headwater.manifest import schema as t
from headwater.manifest.content import SUFFIX, TEMP_PREFIX, ContentStore
from headwater.manifest.records import ACTIVE

MIN_AGE = timedelta(hours=1)


@dataclass(frozen=True, eq=False)
class GarbageReport(JsonView):
    """What one walk of the content store found and removed."""

    scanned: int = 0  # objects looked at
    removed: int = 0  # objects (and stale temp files) deleted, or that would be
    removed_bytes: int = 0
    kept_young: int = 0  # unreferenced, but younger than min_age
    dry_run: bool = False

    def as_dict(self) -> dict[str, Any]:
        """The report as a JSON-ready dict."""
        return {
            "scanned": self.scanned,
            "removed": self.removed,
            "removed_bytes": self.removed_bytes,
            "kept_young": self.kept_young,
            "dry_run": self.dry_run,
        }


def referenced(engine: Engine, prefix: str) -> set[str]:
    """The checksums starting with ``prefix`` that active documents point at."""
    checksum = t.documents.c.checksum
    # Hex digits sort below "g", so [prefix, prefix + "g") is exactly the prefix.
    query = (
        select(checksum)
        .where(checksum >= prefix, checksum < prefix + "g", t.documents.c.state == ACTIVE)
        .distinct()
    )
    with engine.connect() as conn:
        return {row[0] for row in conn.execute(query)}


def collect_garbage(
    engine: Engine,
    store: ContentStore,
    *,
    min_age: timedelta = MIN_AGE,
    now: datetime | None = None,
    dry_run: bool = False,
) -> GarbageReport:
    """Delete (or, with ``dry_run``, count) unreferenced objects older than ``min_age``."""
    cutoff = ((now or utcnow()) - min_age).timestamp()
    scanned = removed = removed_bytes = young = 0
    for prefix in store.prefixes():
        keep = referenced(engine, prefix)
        for entry in store.objects(prefix):
            name = entry.name
            is_object = name.endswith(SUFFIX) and not name.startswith(TEMP_PREFIX)
            if is_object:
                scanned += 1
                if name[: -len(SUFFIX)] in keep:
                    continue
            elif not name.startswith(TEMP_PREFIX):
                continue  # not ours: left alone
            now_entry = store.stat(prefix, name)  # its age read just before it goes
            if now_entry is None or now_entry.modified >= cutoff:
                young += int(is_object and now_entry is not None)
                continue
            if not dry_run and not store.remove(prefix, name):
                continue
            removed += 1
            removed_bytes += now_entry.size
    return GarbageReport(scanned, removed, removed_bytes, young, dry_run)
