"""The shipped conformance suite, run for the dropbox connector against the fake."""

from __future__ import annotations

from pathlib import Path

import pytest
from dropbox_support import make, populate

from fakes.dropbox import FakeDropbox
from headwater.connectors.dropbox import DropboxConnector
from headwater.connectors.testing import ConnectorConformance, ConnectorHarness


class TestDropboxConformance(ConnectorConformance, connector=DropboxConnector):
    @pytest.fixture
    def harness(self, dbx: FakeDropbox, tmp_path: Path) -> ConnectorHarness:
        populate(dbx)
        return ConnectorHarness(
            make=lambda: make(dbx, tmp_path),
            make_broken=lambda: make(dbx, tmp_path, token="sl.wrong"),
            make_failing_listing=lambda: _failing(dbx, tmp_path),
            min_documents=4,
        )


def _failing(dbx: FakeDropbox, tmp_path: Path) -> DropboxConnector:
    """The same API whose listing's second page (list_folder/continue) answers 500."""
    dbx.broken.add("/2/files/list_folder/continue")
    return make(dbx, tmp_path, retry_attempts=2)
