"""The shipped conformance suite, run for the gitlab connector against the fake."""

from __future__ import annotations

from pathlib import Path

import pytest
from gitlab_support import SECRET, make, populate

from fakes.gitlab import FakeGitlab
from headwater.connectors.gitlab import GitlabConnector
from headwater.connectors.testing import ConnectorConformance, ConnectorHarness


class TestGitlabConformance(ConnectorConformance, connector=GitlabConnector):
    @pytest.fixture
    def harness(self, gl: FakeGitlab, tmp_path: Path) -> ConnectorHarness:
        populate(gl)
        return ConnectorHarness(
            make=lambda: make(gl, tmp_path, include_wiki=True),
            make_broken=lambda: make(gl, tmp_path, token="wrong"),
            make_failing_listing=lambda: _failing(gl, tmp_path),
            min_documents=9,
        )


def _failing(gl: FakeGitlab, tmp_path: Path) -> GitlabConnector:
    """The same API whose tree listing of the second project answers 500."""
    gl.broken.add(f"/api/v4/projects/{SECRET.replace('/', '%2F')}/repository/tree")
    return make(gl, tmp_path, include_wiki=True, retry_attempts=2)
