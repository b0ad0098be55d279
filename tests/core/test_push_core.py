"""Push rules in the sync core (``Workspace.push``), on both manifests.

The race tests use two real processes: ``tests/push_driver.py`` decides its push from the
manifest and pauses before committing, this process commits a newer version of the same
object meanwhile, then the driver commits. Its commit was decided from a row that has
changed, so it must write nothing, decide again and answer ``stale``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from headwater.connectors.push import PushConnector
from headwater.manifest import schema as t
from headwater.sync.push import PushOp
from headwater.types import SourceDocument
from headwater.workspace import Workspace
from workspace_helpers import write_config

DRIVER = Path(__file__).resolve().parents[1] / "push_driver.py"
PUSH_SOURCE = '[[source]]\nid = "inbox"\ntype = "push"\naccess = { groups = ["staff"] }\n'


@pytest.fixture
def config(tmp_path: Path, manifest_url: str) -> Path:
    return write_config(tmp_path, manifest_url=manifest_url, sources=PUSH_SOURCE)


@pytest.fixture
def ws(config: Path) -> Iterator[Workspace]:
    with Workspace.open(config, connector_types={"push": PushConnector}) as opened:
        yield opened


def upsert(object_id: str, version: int, text: str | None = None) -> PushOp:
    doc = SourceDocument(
        object_id=object_id,
        locator=f"push://inbox/{object_id}",
        title=object_id,
        version=str(version),
        content=(text or f"{object_id} at version {version}").encode(),
        media_type="text/plain",
        sequence=version,
    )
    return PushOp("upsert", object_id, version, doc)


def one(ws: Workspace, op: PushOp) -> dict[str, object]:
    return ws.push("inbox", [op])[0].as_dict()


def row(ws: Workspace, object_id: str) -> tuple[str, int | None, str | None]:
    with ws.manifest.engine.connect() as conn:
        found = conn.execute(
            select(t.documents.c.state, t.documents.c.sequence, t.documents.c.source_version).where(
                t.documents.c.object_id == object_id
            )
        ).one()
    return str(found[0]), found[1], found[2]


def wait_for_file(path: Path, process: subprocess.Popen[str], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if process.poll() is not None:
            raise AssertionError(f"the driver exited early: {process.communicate()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"{path.name} did not appear in time")
        time.sleep(0.02)


def race(ws: Workspace, config: Path, markers: Path, late: PushOp, winner: PushOp) -> list[dict]:
    """The driver decides ``late``, this process commits ``winner``, the driver commits."""
    markers.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    driver = subprocess.Popen(
        [
            *(sys.executable, str(DRIVER), str(config), "inbox"),
            *(late.object_id, str(late.version), late.op, str(markers)),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        wait_for_file(markers / "ready", driver)
        won = one(ws, winner)
        assert won["status"] in ("new", "changed", "deleted"), won
        (markers / "go").write_text("go")
        out, err = driver.communicate(timeout=120)
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
    assert driver.returncode == 0, err
    results: list[dict] = json.loads(out)
    return results


def test_an_older_push_decided_before_a_newer_commit_in_another_process_is_stale(
    ws: Workspace, config: Path, tmp_path: Path
) -> None:
    assert one(ws, upsert("race", 1))["status"] == "new"
    results = race(ws, config, tmp_path / "m", upsert("race", 2, "older text"), upsert("race", 3))
    assert [r["status"] for r in results] == ["stale"] and results[0]["current_version"] == 3
    assert row(ws, "race") == ("active", 3, "3")  # the acknowledged v3 stays


def test_a_create_racing_a_newer_create_of_a_new_object_is_stale_not_an_error(
    ws: Workspace, config: Path, tmp_path: Path
) -> None:
    results = race(ws, config, tmp_path / "m", upsert("fresh", 2), upsert("fresh", 3))
    assert [r["status"] for r in results] == ["stale"] and results[0]["current_version"] == 3
    assert row(ws, "fresh") == ("active", 3, "3")


def test_an_older_delete_racing_a_newer_upsert_is_stale(
    ws: Workspace, config: Path, tmp_path: Path
) -> None:
    assert one(ws, upsert("kept", 1))["status"] == "new"
    results = race(ws, config, tmp_path / "m", PushOp("delete", "kept", 2), upsert("kept", 4))
    assert [r["status"] for r in results] == ["stale"] and results[0]["current_version"] == 4
    assert row(ws, "kept") == ("active", 4, "4")


def test_a_newer_push_decided_before_an_older_commit_still_wins(
    ws: Workspace, config: Path, tmp_path: Path
) -> None:
    assert one(ws, upsert("up", 1))["status"] == "new"
    results = race(ws, config, tmp_path / "m", upsert("up", 5), upsert("up", 2))
    assert [r["status"] for r in results] == ["changed"]  # decided again above v2
    assert row(ws, "up") == ("active", 5, "5")


def test_a_delete_of_a_never_held_object_keeps_a_tombstone_at_its_version(
    ws: Workspace,
) -> None:
    gone = one(ws, PushOp("delete", "ghost", 5))
    assert gone["status"] == "deleted"
    assert row(ws, "ghost")[:2] == ("deleted", 5)
    assert ws.manifest.tombstone_sequences([str(gone["document_id"])]) == {gone["document_id"]: 5}
    late = one(ws, upsert("ghost", 3, "created, then erased upstream"))
    assert late["status"] == "stale" and late["current_version"] == 5
    assert one(ws, PushOp("delete", "ghost", 5))["status"] == "unchanged"
    ws.index()  # the drain completes the tombstone (no index ever held it) and indexes nothing
    assert ws.manifest.index_state.incomplete_tombstones() == []
    assert ws.manifest.tombstone_sequences([str(gone["document_id"])]) == {gone["document_id"]: 5}
    assert ws.search("erased upstream", groups=["staff"], mode="keyword") == []
    back = one(ws, upsert("ghost", 6, "a real document"))
    assert back["status"] == "new"
    ws.index()
    hits = ws.search("real document", groups=["staff"], mode="keyword")
    assert [h.document_id for h in hits] == [gone["document_id"]]


def test_a_never_held_delete_racing_its_older_create_in_another_process(
    ws: Workspace, config: Path, tmp_path: Path
) -> None:
    results = race(ws, config, tmp_path / "m", upsert("gone", 2), PushOp("delete", "gone", 3))
    assert [r["status"] for r in results] == ["stale"] and results[0]["current_version"] == 3
    assert row(ws, "gone")[:2] == ("deleted", 3)


def test_push_refuses_a_source_that_is_not_a_push_source(tmp_path: Path) -> None:
    root = tmp_path / "files"
    root.mkdir()
    config = write_config(
        tmp_path,
        manifest_url=None,
        sources=PUSH_SOURCE + f'[[source]]\nid = "docs"\ntype = "filesystem"\nroot = "{root}"\n',
    )
    from headwater.errors import NotFoundError, PushConflict

    with Workspace.open(config, connector_types={"push": PushConnector}) as opened:
        with pytest.raises(PushConflict, match="only `push` sources"):
            opened.push("docs", [upsert("x", 1)])
        with pytest.raises(NotFoundError, match="'nope' is not configured"):
            opened.push("nope", [upsert("x", 1)])


def test_a_never_held_tombstone_is_purged_like_any_other(ws: Workspace) -> None:
    gone = one(ws, PushOp("delete", "short-lived", 4))
    doc_id = str(gone["document_id"])
    assert ws.manifest.purge_tombstones(retention_days=0) == []  # not complete yet
    ws.index()
    assert ws.manifest.purge_tombstones(retention_days=0) == [doc_id]
    assert ws.manifest.document(doc_id) is None
    # Past the retention the version is forgotten, as for a held document; the revision
    # stays above the tombstone's, so every index accepts the new document.
    back = one(ws, upsert("short-lived", 2))
    assert back["status"] == "new"
    record = ws.manifest.document(doc_id)
    assert record is not None and record.revision == 2
