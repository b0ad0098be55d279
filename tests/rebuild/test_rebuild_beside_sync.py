"""A rebuild and a sync running at the same time.

A sync that started before a rebuild created (or switched in) a generation still writes
to it: its deletes and ACL changes reach the switched generation. A rebuild whose drain
runs while a sync commits documents behind its cursor catches them up before verifying,
instead of failing verification.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from headwater import Workspace
from headwater.rebuilds import orchestrate as core
from memory_connector import SOURCES, Item, MemoryConnector, MemorySource
from workspace_helpers import write_config

CONNECTORS = {"memory": MemoryConnector}


def _config(tmp_path: Path, manifest_url: str, name: str, batch_size: int = 64) -> Path:
    body = (
        f'[[source]]\nid = "mem"\ntype = "memory"\nname = "{name}"\n'
        f'batch_size = {batch_size}\naccess = {{ groups = ["staff"] }}\n'
    )
    return write_config(tmp_path, manifest_url=manifest_url, sources=body)


def _titles(ws: Workspace, query: str) -> set[str]:
    hits = ws.search(query, groups=["staff"], mode="keyword", k=50)
    return {h["title"] for h in hits}


def test_a_delete_from_a_sync_started_before_the_switch_reaches_the_new_generation(
    tmp_path: Path, manifest_url: str
) -> None:
    name = uuid.uuid4().hex
    SOURCES[name] = MemorySource(
        items={f"id-{n}": Item(f"doc{n}", f"budget figures {n}") for n in range(4)}
    )
    config = _config(tmp_path, manifest_url, name)
    with Workspace.open(config, connector_types=CONNECTORS) as ws:
        ws.sync()
        assert _titles(ws, "budget") == {"doc0", "doc1", "doc2", "doc3"}

    source = SOURCES[name]
    del source.items["id-3"]
    source.explicit_deletes = [("id-3", None)]
    source.items["id-0"] = Item("doc0", "budget figures 0, revised")
    rebuilt: list[dict[str, object]] = []

    def rebuild_mid_sync(reads: int) -> None:
        if rebuilt:
            return
        with Workspace.open(config, connector_types=CONNECTORS) as other:
            rebuilt.append(core.rebuild(other.runtime, force=True))

    source.on_yield = rebuild_mid_sync
    with Workspace.open(config, connector_types=CONNECTORS) as ws:
        ws.sync()  # its indexer was set up while main@1 was the only generation
        source.on_yield = None
        assert rebuilt and rebuilt[0]["indexes"][0]["result"] == "switched"  # type: ignore[index]
        assert ws.live_generation("main").generation == 2
        assert _titles(ws, "budget") == {"doc0", "doc1", "doc2"}  # doc3's delete is in @2
        assert "revised" in " ".join(h["chunk"] for h in ws.search("revised", groups=["staff"]))
        assert ws.reconcile().as_dict()["sinks"]["main"]["in_sync"]
        assert ws.status().as_dict()["indexes"]["main"]["pending"] == 0


def test_a_rebuild_catches_up_what_a_sync_commits_while_it_drains(
    tmp_path: Path, manifest_url: str
) -> None:
    name = uuid.uuid4().hex
    SOURCES[name] = MemorySource(
        items={f"id-{n:03d}": Item(f"doc{n}", f"ledger entry {n}") for n in range(20)}
    )
    config = _config(tmp_path, manifest_url, name, batch_size=10)
    with Workspace.open(config, connector_types=CONNECTORS) as ws:
        ws.sync()
    # The manifest gains documents whose ids sort before the ones the rebuild drains
    # next, as a sync committing beside a rebuild does.
    with Workspace.open(config, connector_types=CONNECTORS) as ws:
        generation = core._needs(ws.runtime, "main", force=True)
        assert generation is not None
        source = SOURCES[name]
        for n in range(20, 60):
            source.items[f"id-{n:03d}"] = Item(f"doc{n}", f"ledger entry {n}")
        drains: list[int] = []
        original = ws.indexes.drain

        def drain_then_sync(indexer, only=None):  # type: ignore[no-untyped-def]
            report = original(indexer, only)
            if not drains:
                ws.sync(index=False)  # committed after the first pass went by
            drains.append(1)
            return report

        ws.indexes.drain = drain_then_sync  # type: ignore[method-assign]
        entry = core.rebuild(ws.runtime, ["main"], force=True)["indexes"][0]
        ws.indexes.drain = original  # type: ignore[method-assign]
        assert entry["result"] == "switched", entry
        assert len(_titles(ws, "ledger")) == 50  # k = 50: at least that many are found
        assert ws.reconcile().as_dict()["sinks"]["main"]["in_sync"]
        assert ws.status().as_dict()["indexes"]["main"]["pending"] == 0
