"""Shared setup for the confluence tests: a populated fake site and connector builders."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from fakes.confluence import FakeConfluence
from headwater import Workspace
from headwater.connectors.base import SourceContext
from headwater.connectors.confluence import ConfluenceConnector, ConfluenceOptions

T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)


def populate(site: FakeConfluence) -> dict[str, str]:
    """Two spaces; ENG readable by a group and a user, OPS by one user."""
    site.users.update({"acc-ann": "Ann@Example.com", "acc-bob": "bob@example.com"})
    site.groups["g-1"] = ("eng-team", ["acc-ann", "acc-bob"])
    site.add_space("ENG", [("group", "g-1"), ("user", "acc-ann")])
    site.add_space("OPS", [("user", "acc-bob")])
    ids = {
        "home": site.add("ENG", "Home", "<p>Welcome home</p>", when=T0.replace(minute=1)),
        "guide": site.add("ENG", "Guide", "<p>How to build</p>", when=T0.replace(minute=2)),
        "news": site.add("ENG", "News", "<p>We shipped</p>", kind="blogpost",
                         when=T0.replace(minute=3)),
        "runbook": site.add("OPS", "Runbook", "<p>Restart it</p>", when=T0.replace(minute=4)),
    }  # fmt: skip
    ids["secret"] = site.add(
        "ENG", "Secret child", "<p>Hidden plans</p>", when=T0.replace(minute=5),
        ancestors=[ids["guide"]], read_users=["acc-ann"],
    )  # fmt: skip
    return ids


def make(site: FakeConfluence, tmp_path: Path, **overrides: Any) -> ConfluenceConnector:
    values: dict[str, Any] = {
        "base_url": site.url, "email": site.user, "api_token": site.token,
        "spaces": ["ENG", "OPS"], "page_size": 2, "window_overlap": "0s",
        "max_attempts": 3, "retry_initial_wait": 0.0,
    } | overrides  # fmt: skip
    return ConfluenceConnector(
        ConfluenceOptions(**values), SourceContext(source_id="wiki", state_dir=tmp_path)
    )


def workspace(site: FakeConfluence, tmp_path: Path, extra: str = "") -> Workspace:
    config = tmp_path / "headwater.toml"
    config.write_text(
        '[workspace]\ntenant = "acme"\nstate_dir = "state"\n'
        '[embedder]\ntype = "fake"\ndimension = 32\n'
        '[[index]]\nname = "main"\ntype = "sqlite"\n'
        f'[[source]]\nid = "wiki"\ntype = "confluence"\nbase_url = "{site.url}"\n'
        f'email = "{site.user}"\napi_token = "${{HW_TEST_CONFLUENCE_TOKEN}}"\n'
        'spaces = ["ENG", "OPS"]\npage_size = 2\nretry_initial_wait = 0.0\n'
        f"prune_max_fraction = 0.9\n{extra}"
    )
    return Workspace.open(config, connector_types={"confluence": ConfluenceConnector})


@pytest.fixture
def site() -> Iterator[FakeConfluence]:
    with FakeConfluence() as fake:
        yield fake
