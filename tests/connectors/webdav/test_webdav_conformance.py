"""The shipped connector conformance suite, run for the webdav connector against WsgiDAV."""

from __future__ import annotations

from pathlib import Path

import pytest
from webdav_support import make_connector

from headwater.connectors.testing import ConnectorConformance, ConnectorHarness


class TestWebdavConformance(ConnectorConformance):
    @pytest.fixture
    def harness(self, share: tuple[str, Path], tmp_path: Path) -> ConnectorHarness:
        url, folder = share
        (folder / "team" / "notes").mkdir(parents=True)
        for i in range(3):
            (folder / f"doc-{i}.md").write_text(f"# Doc {i}\n")
        (folder / "team" / "notes" / "deep.txt").write_text("deep\n")
        return ConnectorHarness(
            make=lambda: make_connector(url, tmp_path),
            make_broken=lambda: make_connector(url, tmp_path, password="wrong"),
        )
