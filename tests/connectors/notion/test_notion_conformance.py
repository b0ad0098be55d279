"""The shipped conformance suite, run for the notion connector against the fake."""

from __future__ import annotations

from pathlib import Path

import pytest
from notion_support import make, populate

from fakes.notion import FakeNotion
from headwater.connectors.notion import NotionConnector
from headwater.connectors.testing import ConnectorConformance, ConnectorHarness


class TestNotionConformance(ConnectorConformance, connector=NotionConnector):
    @pytest.fixture
    def harness(self, notion: FakeNotion, tmp_path: Path) -> ConnectorHarness:
        populate(notion)
        return ConnectorHarness(
            make=lambda: make(notion, tmp_path),
            make_broken=lambda: make(notion, tmp_path, token="secret_wrong"),
            make_failing_listing=lambda: _failing(notion, tmp_path),
        )


def _failing(notion: FakeNotion, tmp_path: Path) -> NotionConnector:
    """The same API whose second page of search results answers 500 (retries run out)."""
    notion.searches, notion.search_fails_after = 0, 1
    return make(notion, tmp_path, retry_attempts=2)
