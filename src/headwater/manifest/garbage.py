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

The walk streams: one prefix directory (the first two hex digits) at a time, one range
query on ``ix_documents_checksum`` per prefix, so memory holds one 256th of the
checksums, never the whole manifest's.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, select

from headwater.clock import utcnow
from headwater.jsonview import JsonView
from headwater.manifest import schema as t
from headwater.manifest.content import ContentStore
from headwater.manifest.records import ACTIVE

MIN_AGE = timedelta(hours=1)
SUFFIX = ".zst"
TEMP_PREFIX = ".tmp-"


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
    for directory in store.prefixes():
        keep = referenced(engine, directory.name)
        for path in store.files(directory):
            name = path.name
            is_object = name.endswith(SUFFIX) and not name.startswith(TEMP_PREFIX)
            if is_object:
                scanned += 1
                if name[: -len(SUFFIX)] in keep:
                    continue
            elif not name.startswith(TEMP_PREFIX):
                continue  # not ours: left alone
            size = _old_size(path, cutoff)
            if size is None:
                young += int(is_object)
                continue
            if not dry_run and not _unlink(path):
                continue
            removed += 1
            removed_bytes += size
    return GarbageReport(scanned, removed, removed_bytes, young, dry_run)


def _old_size(path: Path, cutoff: float) -> int | None:
    """The file's size when it was last written before ``cutoff``; None when younger
    (or gone)."""
    try:
        info = path.stat()
    except FileNotFoundError:
        return None
    return info.st_size if info.st_mtime < cutoff else None


def _unlink(path: Path) -> bool:
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    return True
