"""Rollback never serves what was deleted or re-permissioned while the generation was
``previous``: it is caught up before it becomes live, not after."""

from __future__ import annotations

from pathlib import Path

import pytest

from headwater import Workspace
from headwater.errors import ConfigError
from headwater.rebuilds import orchestrate as core
from workspace_helpers import filesystem_source, write_config


def _config(tmp_path: Path, manifest_url: str, corpus: Path, group: str) -> Path:
    return write_config(
        tmp_path,
        manifest_url=manifest_url,
        sources=filesystem_source(corpus, access=f'{{ groups = ["{group}"] }}'),
    )


def _titles(ws: Workspace, query: str, group: str) -> set[str]:
    return {h["title"] for h in ws.search(query, groups=[group], mode="keyword", k=20)}


def test_a_rolled_back_generation_never_serves_revoked_or_deleted_documents(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    with Workspace.open(_config(tmp_path, manifest_url, corpus, "staff")) as ws:
        ws.sync()
        assert core.rebuild(ws.runtime, force=True)["indexes"][0]["result"] == "switched"
        assert "Vacation policy" in _titles(ws, "vacation", "staff")
    # While main@1 is previous: one document is deleted, every ACL changes to "hr".
    (corpus / "guides" / "expenses.md").unlink()
    with Workspace.open(_config(tmp_path, manifest_url, corpus, "hr")) as ws:
        ws.sync()
        assert _titles(ws, "vacation", "staff") == set()
        seen_at_switch: list[tuple[set[str], set[str]]] = []
        switch = ws.manifest.generations.switch

        def switch_and_search(index_name: str, generation: int, *, entered_from: str) -> None:
            switch(index_name, generation, entered_from=entered_from)
            seen_at_switch.append(
                (_titles(ws, "vacation days meals", "staff"), _titles(ws, "meals", "hr"))
            )

        ws.manifest.generations.switch = switch_and_search  # type: ignore[method-assign]
        rolled = core.rollback(ws.runtime, "main")
        # The moment main@1 serves, "staff" sees nothing and the deleted file is gone.
        assert seen_at_switch == [(set(), set())]
        assert rolled["live"] == 1 and rolled["pending"] == 0, rolled
        assert "Vacation policy" in _titles(ws, "vacation", "hr")
        assert ws.reconcile().as_dict()["sinks"]["main"]["in_sync"]


def test_a_rollback_to_a_generation_that_cannot_be_caught_up_switches_nothing(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    from headwater.pipeline.embed.fake import FakeEmbedder

    config = _config(tmp_path, manifest_url, corpus, "staff")
    with Workspace.open(config, embedder=FakeEmbedder(32)) as ws:  # not reproducible later
        ws.sync()
    with Workspace.open(config) as ws:
        assert core.rebuild(ws.runtime)["indexes"][0]["result"] == "switched"
        (corpus / "notes" / "parking.md").write_text("# Parking\n\nBicycle parking is free.\n")
        ws.sync()
        with pytest.raises(ConfigError, match="main@1 cannot be caught up"):
            core.rollback(ws.runtime, "main")
        assert ws.live_generation("main").generation == 2


def test_a_tombstone_is_kept_while_a_previous_generation_still_holds_its_document(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    config = write_config(
        tmp_path,
        manifest_url=manifest_url,
        sources=filesystem_source(corpus),
        indexes='[[index]]\nname = "main"\ntype = "sqlite"\nkeep_previous_for = "60d"\n',
        extra="[sync]\ntombstone_retention_days = 0\n",  # purged at the end of each sync
    )
    with Workspace.open(config) as ws:
        ws.sync()
        assert core.rebuild(ws.runtime, force=True)["indexes"][0]["result"] == "switched"
        (corpus / "guides" / "expenses.md").unlink()
        ws.sync()  # main@2 deletes it; main@1 (previous) still holds it
        assert _titles(ws, "meals", "staff") == set()
        core.rollback(ws.runtime, "main")
        assert ws.live_generation("main").generation == 1
        assert _titles(ws, "meals", "staff") == set()  # the delete reached main@1 too
        assert ws.reconcile().as_dict()["sinks"]["main"]["in_sync"]
        ws.sync()  # every generation that held it confirmed the delete: now it is purged
        assert ws.manifest.document_by_object("docs", "guides/expenses.md") is None
