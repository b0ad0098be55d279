"""The shipped conformance suite, run for the box connector against the fake."""

from __future__ import annotations

from pathlib import Path

import pytest
from box_support import make, populate

from fakes.box import FakeBox
from headwater.connectors.box import BoxConnector
from headwater.connectors.testing import ConnectorConformance, ConnectorHarness


class TestBoxConformance(ConnectorConformance, connector=BoxConnector):
    @pytest.fixture
    def harness(self, box: FakeBox, tmp_path: Path) -> ConnectorHarness:
        ids = populate(box)
        return ConnectorHarness(
            make=lambda: make(box, tmp_path),
            make_broken=lambda: make(box, tmp_path, token="wrong"),
            make_failing_listing=lambda: _failing(box, tmp_path, ids["team"]),
            min_documents=4,
        )


def _failing(box: FakeBox, tmp_path: Path, team: str) -> BoxConnector:
    """The same API whose listing of the subfolder (after the first pages) answers 500."""
    box.broken.add(f"/2.0/folders/{team}/items")
    return make(box, tmp_path, retry_attempts=2)
