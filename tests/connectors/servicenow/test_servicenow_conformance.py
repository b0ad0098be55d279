"""The shipped conformance suite, run for the servicenow connector against the fake."""

from __future__ import annotations

from pathlib import Path

import pytest
from servicenow_support import make, populate

from fakes.servicenow import FakeServicenow
from headwater.connectors.servicenow import ServicenowConnector
from headwater.connectors.testing import ConnectorConformance, ConnectorHarness


class TestServicenowConformance(ConnectorConformance, connector=ServicenowConnector):
    @pytest.fixture
    def harness(self, sn: FakeServicenow, tmp_path: Path) -> ConnectorHarness:
        populate(sn)
        return ConnectorHarness(
            make=lambda: make(sn, tmp_path),
            make_broken=lambda: make(sn, tmp_path, password="wrong"),
            make_failing_listing=lambda: _failing(sn, tmp_path),
            min_documents=4,
        )


def _failing(sn: FakeServicenow, tmp_path: Path) -> ServicenowConnector:
    """The same instance whose article table answers 500 after its first page."""
    sn.broken_after["kb_knowledge"] = 1
    return make(sn, tmp_path, retry_attempts=2)
