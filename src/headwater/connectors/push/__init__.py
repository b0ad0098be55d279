"""The ``push`` source type: documents arrive through the HTTP API, not from a read.

Its ``read`` yields nothing, so a sync of a push source changes nothing; ``headwater
serve`` commits pushed documents through the same version gates and manifest batch as
the sync runner (``Workspace.push``, in ``headwater.sync.push``). The caller's
per-object ``version`` becomes the document's sequence: replays are no-ops, older
versions are stale.
"""

from __future__ import annotations

from typing import ClassVar

from headwater.connectors.base import (
    ConnectorCapabilities,
    ConnectorOptions,
    ReadStream,
    SourceContext,
)
from headwater.types import Checkpoint, KnownVersions, Window


class PushOptions(ConnectorOptions):
    """A push source has no options of its own (``access`` is the default ACL)."""


class PushConnector:
    """The connector of a push source: documents arrive through the HTTP API."""

    type_name: ClassVar[str] = "push"
    capabilities: ClassVar[ConnectorCapabilities] = ConnectorCapabilities(
        windowed=False, full_listing=False
    )
    Options: ClassVar[type[PushOptions]] = PushOptions

    def __init__(self, options: PushOptions, context: SourceContext | None = None) -> None:
        self.options = options
        self.context = context

    def validate(self) -> None:
        """Nothing to probe: the documents come to us."""

    def read(
        self, window: Window, checkpoint: Checkpoint | None, known: KnownVersions
    ) -> ReadStream:
        """Yield nothing: a push source is never read."""
        yield from ()
        return checkpoint


__all__ = ["PushConnector", "PushOptions"]
