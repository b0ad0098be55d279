"""A real sync process for the lease tests: a slow test connector and a tiny driver.

``python tests/lease_driver.py CONFIG [--no-index]`` opens ``Workspace.open(CONFIG,
connector_types={"slow": SlowConnector})``, syncs, prints the result as JSON and exits 0;
a Headwater error prints one line naming its class on stderr and exits with its code.

``SlowConnector`` reads ``count`` documents (a checkpoint after each). With the
environment variable ``LEASE_PAUSE_AT=k`` it writes ``{marker_dir}/paused`` before the
k-th document and waits until ``{marker_dir}/release`` exists (the test freezes the
process meanwhile). Its ``enumerate`` writes ``{marker_dir}/enumerating`` and then takes
``enumerate_seconds`` to list every object, much longer than a short lease.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

from headwater.connectors.base import (
    ConnectorCapabilities,
    ConnectorOptions,
    ReadStream,
    SourceContext,
)
from headwater.types import Checkpoint, KnownVersions, SourceDocument, Window


class SlowOptions(ConnectorOptions):
    count: int
    marker_dir: str
    enumerate_seconds: float = 0.0


def object_ids(count: int) -> list[str]:
    return [f"doc-{n:03d}" for n in range(count)]


class SlowConnector:
    type_name: ClassVar[str] = "slow"
    capabilities: ClassVar[ConnectorCapabilities] = ConnectorCapabilities()
    Options: ClassVar[type[SlowOptions]] = SlowOptions

    def __init__(self, options: SlowOptions, context: SourceContext | None = None) -> None:
        self.options = options
        self.markers = Path(options.marker_dir)

    def validate(self) -> None:
        self.markers.mkdir(parents=True, exist_ok=True)

    def read(
        self, window: Window, checkpoint: Checkpoint | None, known: KnownVersions
    ) -> ReadStream:
        after = json.loads(checkpoint.cursor)["after"] if checkpoint else ""
        pause_at = os.environ.get("LEASE_PAUSE_AT")
        for n, object_id in enumerate(object_ids(self.options.count)):
            if object_id <= after:
                continue
            if pause_at is not None and n == int(pause_at):
                # written whole, then renamed: a waiter never reads it half written
                (self.markers / "paused.tmp").write_text(str(os.getpid()))
                (self.markers / "paused.tmp").replace(self.markers / "paused")
                while not (self.markers / "release").exists():
                    time.sleep(0.05)
            yield SourceDocument(
                object_id=object_id,
                locator=f"slow://{object_id}",
                title=object_id,
                version="v1",
                content=f"Document {object_id} talks about lease number {n}.".encode(),
                media_type="text/plain",
            )
            yield Checkpoint(json.dumps({"after": object_id}))
        return None

    def enumerate(self) -> Iterator[str]:
        ids = object_ids(self.options.count)
        (self.markers / "enumerating").write_text(str(os.getpid()))
        for object_id in ids:
            time.sleep(self.options.enumerate_seconds / len(ids))
            yield object_id
        (self.markers / "enumerated").write_text(str(os.getpid()))


def main(argv: list[str]) -> int:
    from headwater import Workspace
    from headwater.errors import HeadwaterError

    config, index = argv[0], "--no-index" not in argv
    try:
        with Workspace.open(config, connector_types={"slow": SlowConnector}) as ws:
            result = ws.sync(index=index)
            print(json.dumps([run.status for run in result.runs]))
    except HeadwaterError as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
