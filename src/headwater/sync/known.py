"""What the manifest knows of a source's objects, as the connectors ask it (``KnownVersions``).

A connector asks for the version hint the manifest holds for an object before it reads
it, to skip an unchanged one (a conditional request, or no content at all). One object at
a time that is a manifest query per listed object; ``many`` answers a page of them in one
query per 500 ids (``connectors.base.versions_of`` uses it where the caller has it). On a
full sync a held hint is ``""``: known, but certifying nothing.

The rows ``many`` reads are the ones the sync gates decide the same objects from a moment
later, so it keeps them and the runner ``take``s them at the batch's flush instead of
reading them again (a no-op of a SQL table read each row twice). Each kept row is given
once: an object listed twice in a run (an earlier batch may have written it since) is
read again from the manifest, so what the gates see is never older than what they would
read themselves (under the run's lease no other process writes the source's rows). At
most ``KEPT`` rows are kept (a connector that asks of more objects at once, or of objects
it never yields, costs a second read, not memory).
"""

from __future__ import annotations

from collections.abc import Sequence

from headwater.manifest.records import ACTIVE, DocumentFields
from headwater.manifest.store import Manifest

# rows kept for the gates at most: a few batches' worth (one holds up to 4,096 items)
KEPT = 20_000


class ManifestVersions:
    """The ``KnownVersions`` of one source at one pipeline version."""

    def __init__(
        self, manifest: Manifest, source_id: str, pipeline_version: str, *, full: bool
    ) -> None:
        self.manifest = manifest
        self.source_id = source_id
        self.pipeline_version = pipeline_version
        self.full = full
        # the rows ``many`` read, by object id (None: no row), until the gates take them
        self._read: dict[str, DocumentFields | None] = {}

    def __call__(self, object_id: str) -> str | None:
        """The object's version hint (None: not held; ``""``: held, on a full sync)."""
        version = self.manifest.known_version(self.source_id, object_id, self.pipeline_version)
        return self._hint(version)

    def many(self, object_ids: Sequence[str]) -> dict[str, str | None]:
        """``self(object_id)`` of every id, in one manifest query per 500 ids; the rows
        are kept for ``take``."""
        rows = self.manifest.fields_by_object_ids(self.source_id, object_ids)
        read, pipeline, hints = self._read, self.pipeline_version, {}
        keep = len(read) + len(object_ids) <= KEPT  # else the gates read them again
        for object_id in object_ids:
            row = rows.get(object_id)
            if keep:
                read[object_id] = row
            held = (
                row.source_version
                if row is not None and row.state == ACTIVE and row.pipeline_version == pipeline
                else None
            )
            hints[object_id] = self._hint(held)
        return hints

    def take(self, object_ids: Sequence[str]) -> tuple[dict[str, DocumentFields], Sequence[str]]:
        """The rows ``many`` read of these ids (each given once), by object id, and the ids
        it did not read."""
        read = self._read
        if not read:  # a connector that never asks (a filesystem's): nothing to look for
            return {}, object_ids
        found: dict[str, DocumentFields] = {}
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
        """Whether rows ``many`` read wait for the gates (the connector asked of a page)."""
        return bool(self._read)

    def _hint(self, version: str | None) -> str | None:
        # Known, but a full sync proves nothing by hint: "" asks for no conditional request
        # (no 304), while "known at all" checks (a 404 is a delete) still hold.
        return "" if self.full and version is not None else version
