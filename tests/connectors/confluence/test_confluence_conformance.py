"""The shipped conformance suite, run for the confluence connector against the fake."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluence_support import make, populate

from fakes.confluence import FakeConfluence
from headwater.connectors.confluence import ConfluenceConnector
from headwater.connectors.testing import ConnectorConformance, ConnectorHarness


class TestConfluenceConformance(ConnectorConformance, connector=ConfluenceConnector):
    @pytest.fixture
    def harness(self, site: FakeConfluence, tmp_path: Path) -> ConnectorHarness:
        populate(site)
        return ConnectorHarness(
            make=lambda: make(site, tmp_path),
            make_broken=lambda: make(site, tmp_path, api_token="wrong"),
            make_failing_listing=lambda: _failing(site, tmp_path),
        )


def _failing(site: FakeConfluence, tmp_path: Path) -> ConfluenceConnector:
    """The same site whose second search page (and every one after) answers 500."""
    site.fail_paged_search = True
    return make(site, tmp_path, max_attempts=2)
