"""An in-memory connector with stable ids, for tests that need full control of a source.

Tests mutate ``MemorySource`` between syncs; ``MemoryConnector`` reads it. It can fail
half way through a read or an enumeration, yield explicit deletes and carry sequences.
It passes the shipped conformance suite (see test_memory_connector.py).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import ClassVar

from headwater.connectors.base import (
    ConnectorCapabilities,
    ConnectorOptions,
    ReadStream,
    SourceContext,
)
from headwater.errors import ConfigError
from headwater.types import Checkpoint, Deleted, KnownVersions, SourceDocument, Window


@dataclass
class Item:
    path: str
    text: str
    sequence: int | None = None
    updated_at: datetime = field(default_factory=lambda: datetime(2026, 1, 1, tzinfo=UTC))


@dataclass
class MemorySource:
    """The state of the fake source; tests edit it between syncs."""

    items: dict[str, Item] = field(default_factory=dict)
    explicit_deletes: list[tuple[str, int | None]] = field(default_factory=list)
    fail_read_after: int | None = None
    fail_enumerate_after: int | None = None
    reachable: bool = True
    reads: int = 0
    on_yield: Callable[[int], None] | None = None


SOURCES: dict[str, MemorySource] = {}


class MemoryOptions(ConnectorOptions):
    name: str


class MemoryConnector:
    type_name: ClassVar[str] = "memory"
    capabilities: ClassVar[ConnectorCapabilities] = ConnectorCapabilities(windowed=False)
    Options: ClassVar[type[MemoryOptions]] = MemoryOptions

    def __init__(self, options: MemoryOptions, context: SourceContext | None = None) -> None:
        self.source = SOURCES.setdefault(options.name, MemorySource())

    def validate(self) -> None:
        if not self.source.reachable:
            raise ConfigError("memory source is unreachable; expected reachable = True in the test")

    def read(
        self, window: Window, checkpoint: Checkpoint | None, known: KnownVersions
    ) -> ReadStream:
        after = json.loads(checkpoint.cursor)["after"] if checkpoint else ""
        for n, object_id in enumerate(sorted(self.source.items)):
            if object_id <= after:
                continue
            if self.source.fail_read_after is not None and n >= self.source.fail_read_after:
                raise RuntimeError(f"source broke after {n} objects")
            item = self.source.items[object_id]
            yield SourceDocument(
                object_id=object_id,
                locator=f"memory://{item.path}",
                title=item.path,
                version=f"{hashlib.sha1(item.text.encode()).hexdigest()}:{item.sequence}",
                content=item.text.encode(),
                media_type="text/plain",
                updated_at=item.updated_at,
                sequence=item.sequence,
                metadata={"path": item.path},
            )
            self.source.reads += 1
            if self.source.on_yield is not None:
                self.source.on_yield(self.source.reads)
            yield Checkpoint(json.dumps({"after": object_id}))
        for object_id, sequence in self.source.explicit_deletes:
            yield Deleted(object_id, sequence)
        return None

    def enumerate(self) -> Iterator[str]:
        for n, object_id in enumerate(sorted(self.source.items)):
            if (
                self.source.fail_enumerate_after is not None
                and n >= self.source.fail_enumerate_after
            ):
                raise RuntimeError(f"listing broke after {n} objects")
            yield object_id
