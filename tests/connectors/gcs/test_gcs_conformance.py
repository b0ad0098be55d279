"""The shipped connector conformance suite, run for the gcs connector against
fake-gcs-server (the listing that breaks part way: a proxy refuses its second page)."""

from __future__ import annotations

from pathlib import Path

import pytest
from faultproxy import FaultProxy
from gcs_support import GcsServer, make_connector

from headwater.connectors.gcs import GcsConnector
from headwater.connectors.testing import ConnectorConformance, ConnectorHarness
from ports import free_port

# The module starts fake-gcs-server (a process), so the unit tier (--fast) leaves it out.
pytestmark = pytest.mark.process


class TestGcsConformance(ConnectorConformance, connector=GcsConnector):
    @pytest.fixture
    def harness(
        self, gcs_server: GcsServer, proxy: FaultProxy, bucket: str, tmp_path: Path
    ) -> ConnectorHarness:
        for i in range(5):
            gcs_server.put(bucket, f"docs/note-{i}.md", f"# Note {i}\n", "text/markdown")
        refused = f"http://127.0.0.1:{free_port()}"

        def failing() -> GcsConnector:
            proxy.fault = lambda method, path: 403 if "pageToken=" in path else None
            return make_connector(proxy.url, bucket, tmp_path, page_size=2)

        return ConnectorHarness(
            make=lambda: make_connector(gcs_server.url, bucket, tmp_path, page_size=2),
            make_broken=lambda: make_connector(refused, bucket, tmp_path, retry_attempts=1),
            make_failing_listing=failing,
        )
