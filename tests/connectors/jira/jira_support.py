"""Shared setup for the jira tests: a populated fake site and connector builders."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from fakes.jira import FakeJira
from headwater import Workspace
from headwater.connectors.base import SourceContext
from headwater.connectors.jira import JiraConnector, JiraOptions

T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)


def populate(site: FakeJira) -> dict[str, str]:
    """ENG: a group, a role and the reporter may browse; ENG-3 has a security level.
    OPS: the project lead and bob."""
    site.users.update({"acc-ann": "Ann@Example.com", "acc-bob": "bob@example.com",
                       "acc-cat": "cat@example.com"})  # fmt: skip
    site.groups["g1"] = ("jira-devs", ["acc-ann", "acc-bob"])
    site.add_project("ENG", [
        {"type": "group", "parameter": "jira-devs", "value": "g1"},
        {"type": "projectRole", "parameter": "10002"},
        {"type": "reporter"},
    ])  # fmt: skip
    site.projects["ENG"]["roles"]["10002"] = [
        {"type": "atlassian-user-role-actor", "actorUser": {"accountId": "acc-cat"}},
        {"type": "atlassian-group-role-actor", "actorGroup": {"name": "qa", "groupId": "g2"}},
    ]
    site.add_project("OPS", [{"type": "projectLead"}, {"type": "user", "parameter": "acc-bob"}],
                     lead="acc-cat")  # fmt: skip
    site.levels["10100"] = [{"type": "user", "parameter": "acc-ann"}, {"type": "assignee"}]
    return {
        "eng1": site.add("ENG", "Build breaks", "The build fails on Mondays",
                         updated=T0.replace(minute=1), reporter="acc-ann", issuetype="Bug"),
        "eng2": site.add("ENG", "Write docs", "Document the API", updated=T0.replace(minute=2),
                         comments=[("Ann", "Started on it")]),
        "eng3": site.add("ENG", "Security hole", "Details are private",
                         updated=T0.replace(minute=3), security="10100", assignee="acc-bob",
                         issuetype="Bug"),
        "ops1": site.add("OPS", "Rotate keys", "Every quarter", updated=T0.replace(minute=4)),
    }  # fmt: skip


def make(site: FakeJira, tmp_path: Path, **overrides: Any) -> JiraConnector:
    values: dict[str, Any] = {
        "base_url": site.url, "email": site.user, "api_token": site.token,
        "projects": ["ENG", "OPS"], "page_size": 2, "window_overlap": "0s",
        "max_attempts": 3, "retry_initial_wait": 0.0,
    } | overrides  # fmt: skip
    return JiraConnector(
        JiraOptions(**values), SourceContext(source_id="tickets", state_dir=tmp_path)
    )


def workspace(site: FakeJira, tmp_path: Path, extra: str = "") -> Workspace:
    config = tmp_path / "headwater.toml"
    config.write_text(
        '[workspace]\ntenant = "acme"\nstate_dir = "state"\n'
        '[embedder]\ntype = "fake"\ndimension = 32\n'
        '[[index]]\nname = "main"\ntype = "sqlite"\n'
        f'[[source]]\nid = "tickets"\ntype = "jira"\nbase_url = "{site.url}"\n'
        f'email = "{site.user}"\napi_token = "${{HW_TEST_JIRA_TOKEN}}"\n'
        'projects = ["ENG", "OPS"]\npage_size = 2\nretry_initial_wait = 0.0\n'
        f"prune_max_fraction = 0.9\n{extra}"
    )
    return Workspace.open(config, connector_types={"jira": JiraConnector})


@pytest.fixture
def site() -> Iterator[FakeJira]:
    with FakeJira() as fake:
        yield fake
