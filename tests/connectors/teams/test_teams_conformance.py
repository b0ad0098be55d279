"""The shipped conformance suite, run for the teams connector against the fake Graph."""

from __future__ import annotations

from pathlib import Path

import pytest
from teams_support import make, populate

from fakes.teams import FakeTeams
from headwater.connectors.teams import TeamsConnector
from headwater.connectors.testing import ConnectorConformance, ConnectorHarness


class TestTeamsConformance(ConnectorConformance, connector=TeamsConnector):
    @pytest.fixture
    def harness(self, graph: FakeTeams, tmp_path: Path) -> ConnectorHarness:
        populate(graph)  # reply_days reaching the fake's 2024 messages: threads are recent
        return ConnectorHarness(
            make=lambda: make(graph, tmp_path, reply_days=36500),
            make_broken=lambda: make(graph, tmp_path, token="wrong"),
            make_failing_listing=lambda: _failing(graph, tmp_path),
            min_documents=5,
        )


def _failing(graph: FakeTeams, tmp_path: Path) -> TeamsConnector:
    """The same Graph whose second channel's delta answers 500 (after the first's)."""
    graph.broken.add("/v1.0/teams/t1/channels/c-priv/messages/delta")
    return make(graph, tmp_path, retry_attempts=2, reply_days=36500)
