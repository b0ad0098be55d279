"""A second process that pushes one operation and pauses between its decision and commit.

``python tests/push_driver.py CONFIG SOURCE OBJECT_ID VERSION OP MARKER_DIR`` opens the
workspace, pushes ``OP`` (``upsert`` or ``delete``) of ``OBJECT_ID`` at ``VERSION`` and
prints its results as JSON. Its first manifest commit first writes ``MARKER_DIR/ready``
and waits until ``MARKER_DIR/go`` exists: the test commits a newer version from another
process meanwhile, so this commit is decided from a row that has changed since.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from headwater.connectors.push import PushConnector
from headwater.sync.push import PushOp
from headwater.types import SourceDocument
from headwater.workspace import Workspace

WAIT_S = 120.0


def pause_first_commit(ws: Workspace, markers: Path) -> None:
    commit = ws.manifest.commit_batch
    calls = {"n": 0}

    def paused(*args: Any, **kwargs: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 1:
            (markers / "ready").write_text("decided")
            deadline = time.monotonic() + WAIT_S
            while not (markers / "go").exists():
                if time.monotonic() > deadline:
                    raise SystemExit("push_driver: no go marker in time")
                time.sleep(0.01)
        commit(*args, **kwargs)

    ws.manifest.commit_batch = paused  # type: ignore[method-assign]


def op_of(source_id: str, object_id: str, version: int, op: str) -> PushOp:
    if op == "delete":
        return PushOp("delete", object_id, version)
    doc = SourceDocument(
        object_id=object_id,
        locator=f"push://{source_id}/{object_id}",
        title=object_id,
        version=str(version),
        content=f"{object_id} at version {version}".encode(),
        media_type="text/plain",
        sequence=version,
    )
    return PushOp("upsert", object_id, version, doc)


def main() -> None:
    config, source_id, object_id, version, op, marker_dir = sys.argv[1:7]
    with Workspace.open(config, connector_types={"push": PushConnector}) as ws:
        pause_first_commit(ws, Path(marker_dir))
        results = ws.push(source_id, [op_of(source_id, object_id, int(version), op)])
    print(json.dumps([r.as_dict() for r in results]))


if __name__ == "__main__":
    main()
