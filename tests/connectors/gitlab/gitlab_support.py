"""Shared setup for the gitlab tests: a populated fake API and connector builders."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from fakes.gitlab import FakeGitlab, Item
from headwater import Workspace
from headwater.connectors.base import SourceContext
from headwater.connectors.gitlab import GitlabConnector, GitlabOptions

T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
SITE, SECRET = "acme/site", "acme/eng/secret"
ACME, ENG, OPS = 10, 11, 12


def populate(gl: FakeGitlab) -> None:
    """A public project in group acme (two files, two issues, a merge request) and a
    private one in its subgroup acme/eng (two files, an issue), shared with ops as Guest."""
    gl.add_user(1, "ann", "ann@example.com")
    gl.add_user(2, "bob", None)  # no public email: named by username like the others
    gl.add_user(3, "cat", "cat@example.com")
    gl.add_user(4, "dan", "dan@example.com")
    gl.add_user(5, "eve", "eve@example.com")
    gl.add_group(ACME, "acme", members={5: 30, 4: 10})
    gl.add_group(ENG, "eng", parent=ACME, members={3: 20, 2: 40})
    gl.add_group(OPS, "ops", members={1: 50})
    gl.add_project(SITE, visibility="public", group=ACME)
    gl.commit(SITE, {"README.md": b"# Site\nHello", "docs/guide.md": b"# Guide\nSteps"})
    gl.projects[SITE].issues = {
        1: Item(
            1, "Typo", "teh", updated=T0.replace(minute=1), notes=[("cat", "Confirmed", False)]
        ),
        2: Item(2, "Old bug", "gone", state="closed", updated=T0.replace(minute=2)),
    }
    gl.projects[SITE].merge_requests = {
        1: Item(1, "Fix typo", "Replaces teh", updated=T0.replace(minute=3),
                notes=[("ann", "added 1 commit", True), ("ann", "LGTM", False)]),
    }  # fmt: skip
    gl.projects[SITE].wiki = {"home": "# Welcome\nStart here"}
    gl.add_project(SECRET, group=ENG, members={1: 30, 4: 10}, shares={OPS: 10})
    gl.commit(SECRET, {"notes.md": b"# Keys\nRotate", "src/a.py": b"print('a')\n"})
    gl.projects[SECRET].issues = {1: Item(1, "Incident", "DNS", updated=T0.replace(minute=4))}


def make(gl: FakeGitlab, tmp_path: Path, **overrides: Any) -> GitlabConnector:
    values: dict[str, Any] = {
        "base_url": gl.url,
        "token": gl.token,
        "projects": [SITE, SECRET],
        "page_size": 1,
        "window_overlap": "0s",
        "retry_attempts": 3,
        "retry_initial_wait": 0.0,
        "retry_max_wait": 0.0,
    } | overrides
    return GitlabConnector(
        GitlabOptions(**values), SourceContext(source_id="gl", state_dir=tmp_path)
    )


def workspace(gl: FakeGitlab, tmp_path: Path, extra: str = "") -> Workspace:
    config = tmp_path / "headwater.toml"
    config.write_text(
        '[workspace]\ntenant = "acme"\nstate_dir = "state"\n'
        '[embedder]\ntype = "fake"\ndimension = 32\n'
        '[[index]]\nname = "main"\ntype = "sqlite"\n'
        f'[[source]]\nid = "gl"\ntype = "gitlab"\nbase_url = "{gl.url}"\n'
        'token = "${HW_TEST_GITLAB_TOKEN}"\n'
        f'projects = ["{SITE}", "{SECRET}"]\nretry_initial_wait = 0.0\nretry_max_wait = 0.0\n'
        f'window_overlap = "0s"\nprune_max_fraction = 0.9\n{extra}'
    )
    return Workspace.open(config)  # `gitlab` found by its entry point (use_declared_connectors)


@pytest.fixture
def gl() -> Iterator[FakeGitlab]:
    with FakeGitlab() as fake:
        yield fake
