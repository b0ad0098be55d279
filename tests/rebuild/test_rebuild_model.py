"""The real bundled model: a workspace indexed with the fake embedder switches to the
local model by a rebuild (no source read), and back to the fake one by a rollback."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from headwater import Workspace
from headwater.rebuilds import orchestrate as core
from workspace_helpers import filesystem_source, write_config

pytestmark = [pytest.mark.model, pytest.mark.slow]


def test_fake_to_local_and_back(tmp_path: Path, corpus: Path) -> None:
    def config(embedder: str) -> Path:
        return write_config(
            tmp_path, manifest_url=None, sources=filesystem_source(corpus), embedder=embedder
        )

    with Workspace.open(config('[embedder]\ntype = "fake"\ndimension = 32\n')) as ws:
        ws.sync()
    shutil.rmtree(corpus)
    with Workspace.open(config('[embedder]\ntype = "local"\n')) as ws:
        entry = core.rebuild(ws.runtime)["indexes"][0]
        assert entry["result"] == "switched", entry
        assert ws.indexes.query_embedder("main").dimension == 384
        hits = ws.search("how much time off do I get", groups=["staff"], mode="vector")
        assert hits[0]["title"] == "Vacation policy"
        core.rollback(ws.runtime, "main")
        assert ws.indexes.query_embedder("main").dimension == 32
        assert ws.search("vacation days", groups=["staff"], mode="vector")
