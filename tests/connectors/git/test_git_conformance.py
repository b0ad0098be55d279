"""The shipped connector conformance suite, for the git connector on a local repository."""

from __future__ import annotations

from pathlib import Path

import pytest
from git_support import GitRepo, make_connector

from headwater.connectors.git import GitConnector
from headwater.connectors.testing import (
    FAR_FUTURE,
    ConnectorConformance,
    ConnectorHarness,
    collect,
    no_known,
)
from headwater.types import Window


class TestGitConformance(ConnectorConformance, connector=GitConnector):
    @pytest.fixture
    def harness(self, repo: GitRepo, tmp_path: Path) -> ConnectorHarness:
        state = tmp_path / "state"
        missing = (tmp_path / "no-such-repo").as_uri()

        def failing() -> GitConnector:
            """A mirror that lost the tree of zz/: the listing breaks half way."""
            broken_state = tmp_path / "broken-state"
            connector = make_connector(repo.url, broken_state, page_size=2)
            collect(connector.read(Window(None, FAR_FUTURE), None, no_known))
            tree = repo.git("rev-parse", "HEAD:zz")
            mirror = broken_state / "git" / "git-test"
            (mirror / "objects" / tree[:2] / tree[2:]).unlink()
            return connector

        return ConnectorHarness(
            make=lambda: make_connector(repo.url, state, page_size=2),
            make_broken=lambda: make_connector(missing, state),
            make_failing_listing=failing,
        )
