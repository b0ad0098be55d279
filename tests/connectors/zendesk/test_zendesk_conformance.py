"""The shipped conformance suite, run for the zendesk connector against the fake."""

from __future__ import annotations

from pathlib import Path

import pytest
from zendesk_support import make, populate

from fakes.zendesk import FakeZendesk
from headwater.connectors.testing import ConnectorConformance, ConnectorHarness
from headwater.connectors.zendesk import ZendeskConnector


class TestZendeskConformance(ConnectorConformance, connector=ZendeskConnector):
    @pytest.fixture
    def harness(self, zd: FakeZendesk, tmp_path: Path) -> ConnectorHarness:
        populate(zd)
        return ConnectorHarness(
            make=lambda: make(zd, tmp_path),
            make_broken=lambda: make(zd, tmp_path, token="wrong"),
            make_failing_listing=lambda: _failing(zd, tmp_path),
            min_documents=4,
        )


def _failing(zd: FakeZendesk, tmp_path: Path) -> ZendeskConnector:
    """The same API whose export (and article list) answers 500 from now on."""
    zd.broken.add("/api/v2/help_center/incremental")
    zd.broken.add("/api/v2/help_center/articles")
    return make(zd, tmp_path, retry_attempts=2)
