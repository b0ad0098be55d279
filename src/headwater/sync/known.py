"""What the manifest knows of a source's objects, as the connectors ask it (``KnownVersions``).

A connector asks for the version hint the manifest holds for an object before it reads
it, to skip an unchanged one (a conditional request, or no content at all). One object at
a time that is a manifest query per listed object; ``many`` answers a page of them in one
query per 500 ids (``connectors.base.versions_of`` uses it where the caller has it). On a
full sync a held hint is ``""``: known, but certifying nothing.

The rows ``many`` reads (``HINT_COLUMNS``: what gate 1's skip compares) are the ones
the batch's check of documents held as listed (``sync.held``) needs a moment later, so it
keeps them and the check ``take``s them at the batch's flush instead of reading them
again (a no-op of a SQL table read each row twice). Each kept row is given once: an
object listed twice in a run (an earlier batch may have written it since) is read again
from the manifest, so what is compared is never older than what the check would read
itself (under the run's lease no other process writes the source's rows). At most
``KEPT`` rows are kept (a connector that asks of more objects at once, or of objects it
never yields, costs a second read, not memory); a full sync keeps none (nothing is
skipped by hint there).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from headwater.manifest.records import ACTIVE
from headwater.manifest.store import Manifest

# rows kept for the check at most: a few batches' worth (one holds up to 4,096 items)
KEPT = 20_000

# The columns gate 1's skip compares (``sync.held``), in the order it reads them: the
# row's [1:7] against a listed document's expected values, then its title, then its id.
HINT_COLUMNS = (
    "object_id",
    "source_version",
    "locator",
    "metadata",
    "state",
    "pipeline_version",
    "acl",
    "title",
    "document_id",
)
HintRow = Sequence[Any]  # a row's HINT_COLUMNS, as the driver gives them


class ManifestVersions:
    """The ``KnownVersions`` of one source at one pipeline version."""

    def __init__(
        self, manifest: Manifest, source_id: str, pipeline_version: str, *, full: bool
    ) -> None:
        self.manifest = manifest
        self.source_id = source_id
        self.pipeline_version = pipeline_version
        self.full = full
        # the rows ``many`` read, by object id (None: no row), until the check takes them
        self._read: dict[str, HintRow | None] = {}

    def __call__(self, object_id: str) -> str | None:
        """The object's version hint (None: not held; ``""``: held, on a full sync)."""
        version = self.manifest.known_version(self.source_id, object_id, self.pipeline_version)
        return self._hint(version)

    def many(self, object_ids: Sequence[str]) -> dict[str, str | None]:
        """``self(object_id)`` of every id, in one manifest query per 500 ids; the rows
        are kept for ``take``."""
        rows = self.manifest.rows_by_object_ids(
            self.source_id, object_ids, HINT_COLUMNS, listed=False
        )
        found = {row[0]: row for row in rows}
        read, pipeline, hints = self._read, self.pipeline_version, {}
        # else the check reads them again; a full sync skips nothing by hint
        keep = not self.full and len(read) + len(object_ids) <= KEPT
        for object_id in object_ids:
            row = found.get(object_id)
            if keep:
                read[object_id] = row
            held = row[1] if row is not None and row[4] == ACTIVE and row[5] == pipeline else None
            hints[object_id] = self._hint(held)
        return hints

    def take(self, object_ids: Sequence[str]) -> tuple[dict[str, HintRow], list[str]]:
        """The rows ``many`` read of these ids (each given once: taken, they are gone),
        by object id, and the ids it did not read."""
        read = self._read
        if not read:  # a connector that never asks (a filesystem's): nothing to look for
            return {}, list(object_ids)
        found: dict[str, HintRow] = {}
        unread: list[str] = []
        for object_id in object_ids:
            if object_id not in read:
                unread.append(object_id)
            elif (row := read.pop(object_id)) is not None:
                found[object_id] = row
        if len(read) > KEPT:
            read.clear()
        return found, unread

    def keeps_rows(self) -> bool:
        """Whether rows ``many`` read wait to be taken (the connector asked of a page)."""
        return bool(self._read)

    def _hint(self, version: str | None) -> str | None:
        # Known, but a full sync proves nothing by hint: "" asks for no conditional request
        # (no 304), while "known at all" checks (a 404 is a delete) still hold.
        return "" if self.full and version is not None else version
