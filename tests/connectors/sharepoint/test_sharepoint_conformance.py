"""The shipped conformance suite against the fake Microsoft Graph."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr

from fakes.sharepoint import SITE, TOKEN, FakeGraph
from headwater.connectors.base import SourceContext
from headwater.connectors.sharepoint import SharepointConnector, SharepointOptions
from headwater.connectors.testing import ConnectorConformance, ConnectorHarness


def make(base_url: str, tmp_path: Path, token: str = TOKEN, **extra: object) -> SharepointConnector:
    options = SharepointOptions.model_validate(
        {"token": SecretStr(token), "site": SITE, "base_url": base_url + "/v1.0",
         "page_size": 2, "retry_attempts": 2, "retry_initial_wait": 0.01, **extra}
    )  # fmt: skip
    return SharepointConnector(options, SourceContext(source_id="sp", state_dir=tmp_path))


class TestSharepointConformance(ConnectorConformance, connector=SharepointConnector):
    @pytest.fixture
    def harness(self, graph: FakeGraph, tmp_path: Path) -> ConnectorHarness:
        def failing() -> SharepointConnector:
            graph.broken = True  # every later delta page answers 500 from now on
            return make(graph.url, tmp_path)

        return ConnectorHarness(
            make=lambda: make(graph.url, tmp_path),
            make_broken=lambda: make(graph.url, tmp_path, token="expired"),
            make_failing_listing=failing,
        )
