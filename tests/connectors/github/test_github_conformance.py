"""The shipped conformance suite, run for the github connector against the fake."""

from __future__ import annotations

from pathlib import Path

import pytest
from github_support import SECRET, make, populate

from fakes.github import FakeGithub
from headwater.connectors.github import GithubConnector
from headwater.connectors.testing import ConnectorConformance, ConnectorHarness


class TestGithubConformance(ConnectorConformance, connector=GithubConnector):
    @pytest.fixture
    def harness(self, gh: FakeGithub, tmp_path: Path) -> ConnectorHarness:
        populate(gh)
        return ConnectorHarness(
            make=lambda: make(gh, tmp_path),
            make_broken=lambda: make(gh, tmp_path, token="wrong"),
            make_failing_listing=lambda: _failing(gh, tmp_path),
        )


def _failing(gh: FakeGithub, tmp_path: Path) -> GithubConnector:
    """The same API whose listing of the second repo answers 500."""
    gh.broken.add(f"/repos/{SECRET}/issues")
    return make(gh, tmp_path, max_attempts=2)
