"""The shipped connector conformance suite, run for the azure_blob connector against
Azurite (the listing that breaks part way: a proxy refuses its second page)."""

from __future__ import annotations

from pathlib import Path

import pytest
from azure_support import DEV_ACCOUNT, Azurite, make_connector
from faultproxy import FaultProxy

from headwater.connectors.azure_blob import AzureBlobConnector
from headwater.connectors.testing import ConnectorConformance, ConnectorHarness
from ports import free_port

# The module starts Azurite (a process), so the unit tier (--fast) leaves it out.
pytestmark = pytest.mark.process


class TestAzureBlobConformance(ConnectorConformance, connector=AzureBlobConnector):
    @pytest.fixture
    def harness(
        self, azurite_server: Azurite, proxy: FaultProxy, container: str, tmp_path: Path
    ) -> ConnectorHarness:
        for i in range(5):
            azurite_server.put(container, f"docs/note-{i}.md", f"# Note {i}\n", "text/markdown")
        refused = f"http://127.0.0.1:{free_port()}/{DEV_ACCOUNT}"
        proxied = f"{proxy.url}/{DEV_ACCOUNT}"

        def failing() -> AzureBlobConnector:
            proxy.fault = lambda method, path: 403 if "marker=" in path else None
            return make_connector(proxied, container, tmp_path, page_size=2)

        return ConnectorHarness(
            make=lambda: make_connector(azurite_server.url, container, tmp_path, page_size=2),
            make_broken=lambda: make_connector(refused, container, tmp_path, retry_attempts=1),
            make_failing_listing=failing,
        )
