"""Document rows for the manifest tests: one plain active row, any field changed."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from headwater.manifest.records import DocumentWrite


def document_write(object_id: str, n: int, **changes: Any) -> DocumentWrite:
    """A new, active, public row ``doc{n}`` of source ``s`` for ``object_id``; ``changes``
    replace any field."""
    row = DocumentWrite(
        document_id=f"doc{n}",
        source_id="s",
        object_id=object_id,
        locator=f"/r/{object_id}",
        title="T",
        media_type=None,
        source_version=f"{n}:1",
        checksum="c",
        signature="g",
        pipeline_version="p",
        revision=1,
        sequence=None,
        state="active",
        acl=("public",),
        metadata={"path": object_id},
        last_seen_run=None,
        is_new=True,
    )
    return replace(row, **changes)
