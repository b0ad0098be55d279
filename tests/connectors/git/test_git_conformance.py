"""The shipped connector conformance suite, for the git connector on a local repository."""

from __future__ import annotations

from pathlib import Path

import pytest
from git_support import GitRepo, make_connector

from headwater.connectors.testing import ConnectorConformance, ConnectorHarness


class TestGitConformance(ConnectorConformance):
    @pytest.fixture
    def harness(self, repo: GitRepo, tmp_path: Path) -> ConnectorHarness:
        state = tmp_path / "state"
        missing = (tmp_path / "no-such-repo").as_uri()
        return ConnectorHarness(
            make=lambda: make_connector(repo.url, state, page_size=2),
            make_broken=lambda: make_connector(missing, state),
        )
