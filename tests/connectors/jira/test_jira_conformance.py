"""The shipped conformance suite, run for the jira connector against the fake."""

from __future__ import annotations

from pathlib import Path

import pytest
from jira_support import make, populate

from fakes.jira import FakeJira
from headwater.connectors.jira import JiraConnector
from headwater.connectors.testing import ConnectorConformance, ConnectorHarness


class TestJiraConformance(ConnectorConformance, connector=JiraConnector):
    @pytest.fixture
    def harness(self, site: FakeJira, tmp_path: Path) -> ConnectorHarness:
        populate(site)
        return ConnectorHarness(
            make=lambda: make(site, tmp_path),
            make_broken=lambda: make(site, tmp_path, api_token="wrong"),
            make_failing_listing=lambda: _failing(site, tmp_path),
        )


def _failing(site: FakeJira, tmp_path: Path) -> JiraConnector:
    """The same site whose second search page (and every one after) answers 500."""
    site.fail_paged_search = True
    return make(site, tmp_path, max_attempts=2)
