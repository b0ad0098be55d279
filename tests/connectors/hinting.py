"""Hints in connector tests: queue one (no debounce) and run its targeted read at once.

Shared by the connectors' refetch tests: ``hinted`` queues a change or delete hint for
named objects through the real queue and reads it with ``read_due``, asserting that it
was a targeted read (the connector's ``refetch``), never a fallback sync.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from headwater import Workspace
from headwater.hints.queue import HintRead, queue, read_due
from headwater.manifest.hints import CHANGED, DELETED


def hinted(
    ws: Workspace, source: str, object_ids: Sequence[str], *, deleted: bool = False
) -> HintRead:
    """Queue a hint for ``object_ids`` and read it; the read (always targeted)."""
    kind = DELETED if deleted else CHANGED
    queue(ws.runtime, source, object_ids, kind=kind, origin="test", debounce=timedelta(0))
    read = read_due(ws.runtime, source)
    assert read is not None and read.mode == "targeted", read
    assert ws.manifest.hints.queued(source) == []
    return read


def state_of(ws: Workspace, source: str, object_id: str) -> tuple[str, int] | None:
    """(state, revision) of the document of ``object_id``; None when the manifest has none."""
    record = ws.manifest.document_by_object(source, object_id)
    return None if record is None else (record.state, record.revision)
