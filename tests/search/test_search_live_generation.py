"""A search reads each index's live generation once, for its sink and its query embedder.

Reading it twice (once for the sink, once for the embedder) cost a manifest round trip per
search and let a ``rebuild switch`` committed between the two reads pair one generation's
sink with the other's embedder: query vectors of one model against another's index.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from headwater import Workspace
from workspace_helpers import filesystem_source, write_config


@pytest.mark.parametrize("mode", ["hybrid", "vector", "keyword"])
def test_a_search_reads_each_live_generation_once(
    tmp_path: Path, corpus: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write_config(tmp_path, manifest_url=None, sources=filesystem_source(corpus))
    with Workspace.open(config) as ws:
        ws.sync()
        generations = ws.manifest.generations
        reads: list[str] = []
        live = generations.live

        def counted(name: str) -> Any:
            reads.append(name)
            return live(name)

        monkeypatch.setattr(generations, "live", counted)
        hits = ws.search("vacation days", groups=["staff"], mode=mode)
        assert hits and hits[0]["title"] == "Vacation policy"
        assert reads == ["main"], reads
