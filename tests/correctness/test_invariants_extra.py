"""Invariants 2, 12 and 13 stated directly: rebuild without the source, default deny,
streaming in bounded batches."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

from headwater import Workspace
from headwater.indexer.reconcile import reconcile
from memory_connector import SOURCES, Item, MemoryConnector, MemorySource
from workspace_helpers import filesystem_source, write_config


def test_an_index_is_rebuilt_from_the_manifest_without_touching_the_source(
    tmp_path: Path, corpus: Path
) -> None:
    config = write_config(tmp_path, manifest_url=None, sources=filesystem_source(corpus))
    with Workspace.open(config) as ws:
        ws.sync()
        before = ws.search("vacation days", groups=["staff"], mode="keyword")
    (tmp_path / "state" / "index-main.db").unlink()
    shutil.rmtree(corpus)  # the source is gone: only the manifest and content store remain
    with Workspace.open(config) as ws:
        assert ws.search("vacation days", groups=["staff"], mode="keyword") == []
        reconcile(ws, repair=True)
        after = ws.search("vacation days", groups=["staff"], mode="keyword")
        assert [h["chunk_id"] for h in after] == [h["chunk_id"] for h in before]


def test_a_document_without_acl_is_visible_to_no_one(tmp_path: Path, corpus: Path) -> None:
    closed = f'[[source]]\nid = "closed"\ntype = "filesystem"\nroot = "{corpus}"\n'
    config = write_config(tmp_path, manifest_url=None, sources=closed)
    with Workspace.open(config) as ws:
        assert ws.sync().index.replaced == 5  # indexed, but for nobody
        assert ws.document(source="closed", object_id="readme.md")["access"] == {
            "users": [],
            "groups": [],
            "public": False,
        }
        for mode in ("hybrid", "vector", "keyword"):
            assert (
                ws.search("vacation", user="a@b.c", groups=["staff", "hr", "public"], mode=mode)
                == []
            )
            assert ws.search("vacation", mode=mode) == []


def test_the_runner_streams_a_source_in_committed_batches(tmp_path: Path) -> None:
    name = uuid.uuid4().hex
    SOURCES[name] = MemorySource(
        items={f"id-{n:04d}": Item(f"p{n}", f"text {n}") for n in range(300)}
    )
    committed_when_read: dict[int, int] = {}
    body = (
        f'[[source]]\nid = "mem"\ntype = "memory"\nname = "{name}"\nbatch_size = 10\n'
        "access = { public = true }\n"
    )
    config = write_config(tmp_path, manifest_url=None, sources=body)
    with Workspace.open(config, connector_types={"memory": MemoryConnector}) as ws:
        SOURCES[name].on_yield = lambda n: committed_when_read.__setitem__(
            n, ws.manifest.count_documents("mem")
        )
        ws.sync(index=False)
    # While the connector produced item n, everything up to the previous batch was already
    # committed: the runner never holds more than about one batch of the source.
    for n, committed in committed_when_read.items():
        assert committed >= n - 1 - 10, (n, committed)
    assert committed_when_read[300] >= 280
