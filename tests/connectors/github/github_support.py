"""Shared setup for the github tests: a populated fake API and connector builders."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from fakes.github import FakeGithub
from headwater import Workspace
from headwater.connectors.base import SourceContext
from headwater.connectors.github import GithubConnector, GithubOptions

T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
PUBLIC, SECRET = "octo/site", "octo/secret"


def populate(gh: FakeGithub) -> None:
    """A public repo (an issue, a pull request) and a private one (two issues)."""
    gh.users.update({"ann": "Ann@Example.com", "bob": None, "cat": "cat@example.com"})
    gh.teams["octo/core"] = ["ann", "cat"]
    gh.add_repo(PUBLIC)
    gh.add_repo(SECRET, private=True, collaborators=["ann", "bob"], teams=["core"])
    gh.add(
        PUBLIC,
        "Typo on home page",
        "The word 'teh'",
        updated=T0.replace(minute=1),
        comments=[("cat", "Confirmed")],
    )
    gh.add(
        PUBLIC,
        "Fix the typo",
        "Replaces teh",
        is_pr=True,
        updated=T0.replace(minute=2),
        review_comments=[("ann", "index.html", "Also fix the title")],
    )
    gh.add(SECRET, "Key rotation", "Rotate every quarter", updated=T0.replace(minute=3))
    gh.add(SECRET, "Incident 7", "Root cause: DNS", updated=T0.replace(minute=4))


def make(gh: FakeGithub, tmp_path: Path, **overrides: Any) -> GithubConnector:
    values: dict[str, Any] = {
        "base_url": gh.url,
        "token": gh.token,
        "repos": [PUBLIC, SECRET],
        "page_size": 1,
        "window_overlap": "0s",
        "max_attempts": 3,
        "retry_initial_wait": 0.0,
    } | overrides
    return GithubConnector(
        GithubOptions(**values), SourceContext(source_id="gh", state_dir=tmp_path)
    )


def workspace(gh: FakeGithub, tmp_path: Path, extra: str = "") -> Workspace:
    config = tmp_path / "headwater.toml"
    config.write_text(
        '[workspace]\ntenant = "acme"\nstate_dir = "state"\n'
        '[embedder]\ntype = "fake"\ndimension = 32\n'
        '[[index]]\nname = "main"\ntype = "sqlite"\n'
        f'[[source]]\nid = "gh"\ntype = "github"\nbase_url = "{gh.url}"\n'
        'token = "${HW_TEST_GITHUB_TOKEN}"\n'
        f'repos = ["{PUBLIC}", "{SECRET}"]\nretry_initial_wait = 0.0\n'
        f"prune_max_fraction = 0.9\n{extra}"
    )
    return Workspace.open(config, connector_types={"github": GithubConnector})


@pytest.fixture
def gh() -> Iterator[FakeGithub]:
    with FakeGithub() as fake:
        yield fake
