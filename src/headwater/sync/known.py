"""What the manifest knows of a source's objects, as the connectors ask it (``KnownVersions``).

A connector asks for the version hint the manifest holds for an object before it reads
it, to skip an unchanged one (a conditional request, or no content at all). One object at
a time that is a manifest query per listed object; ``many`` answers a page of them in one
query per 500 ids (``connectors.base.versions_of`` uses it where the caller has it). On a
full sync a held hint is ``""``: known, but certifying nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from headwater.manifest.lookups import known_versions
from headwater.manifest.store import Manifest


class ManifestVersions:
    """The ``KnownVersions`` of one source at one pipeline version."""

    def __init__(
        self, manifest: Manifest, source_id: str, pipeline_version: str, *, full: bool
    ) -> None:
        self.manifest = manifest
        self.source_id = source_id
        self.pipeline_version = pipeline_version
        self.full = full

    def __call__(self, object_id: str) -> str | None:
        """The object's version hint (None: not held; ``""``: held, on a full sync)."""
        version = self.manifest.known_version(self.source_id, object_id, self.pipeline_version)
        return self._hint(version)

    def many(self, object_ids: Sequence[str]) -> dict[str, str | None]:
        """``self(object_id)`` of every id, in one manifest query per 500 ids."""
        found = known_versions(
            self.manifest.engine, self.source_id, object_ids, self.pipeline_version
        )
        return {object_id: self._hint(found.get(object_id)) for object_id in object_ids}

    def _hint(self, version: str | None) -> str | None:
        # Known, but a full sync proves nothing by hint: "" asks for no conditional request
        # (no 304), while "known at all" checks (a 404 is a delete) still hold.
        return "" if self.full and version is not None else version
