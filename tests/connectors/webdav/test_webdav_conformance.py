"""The shipped connector conformance suite, run for the webdav connector against WsgiDAV."""

from __future__ import annotations

from pathlib import Path

import pytest
from dav_faults import MARKER
from webdav_support import make_connector

from headwater.connectors.testing import ConnectorConformance, ConnectorHarness
from headwater.connectors.webdav import WebdavConnector


class TestWebdavConformance(ConnectorConformance, connector=WebdavConnector):
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
            make_failing_listing=lambda: _failing(folder / "team", url, tmp_path),
        )


def _failing(collection: Path, url: str, tmp_path: Path) -> WebdavConnector:
    """The same share with ``team/`` refusing PROPFIND (500, see dav_faults.py)."""
    (collection / MARKER).write_text("")
    return make_connector(url, tmp_path)
