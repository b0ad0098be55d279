"""Shared setup for the teams tests: a populated fake Graph and connector builders."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fakes.teams import FakeTeams
from headwater.connectors.base import SourceContext
from headwater.connectors.teams import TeamsConnector, TeamsOptions


def populate(graph: FakeTeams) -> dict[str, str]:
    """Team t1 (ann, bob) with a standard channel (three threads, one with replies), a
    private channel (ann) and a shared channel (ann and a partner); ids by name."""
    graph.team("t1", "Engineering", ["ann@example.com", "bob@example.com"])
    graph.channel("t1", "c-gen", "General", "standard", [])
    graph.channel("t1", "c-priv", "Leads", "private", ["ann@example.com"])
    graph.channel("t1", "c-shared", "Partners", "shared", ["ann@example.com", "eve@partner.com"])
    ids = {
        "hello": graph.post("t1", "c-gen", "ann", "<p>Hello <b>team</b></p>"),
        "plan": graph.post("t1", "c-gen", "bob", "<p>The plan for Q3</p>"),
        "lunch": graph.post("t1", "c-gen", "ann", "<p>Lunch?</p>"),
        "secret": graph.post("t1", "c-priv", "ann", "<p>Salary review</p>"),
        "partner": graph.post("t1", "c-shared", "eve", "<p>Contract draft</p>"),
    }
    graph.reply("t1", "c-gen", ids["plan"], "ann", "<p>Looks good</p>")
    graph.reply("t1", "c-gen", ids["plan"], "bob", "<p>Shipping it</p>")
    return ids


def make(graph: FakeTeams, tmp_path: Path, **overrides: Any) -> TeamsConnector:
    values: dict[str, Any] = {
        "token": graph.token,
        "teams": ["t1"],
        "base_url": graph.url + "/v1.0",
        "page_size": 2,
        "retry_attempts": 3,
        "retry_initial_wait": 0.0,
        "retry_max_wait": 0.0,
    } | overrides
    return TeamsConnector(
        TeamsOptions(**values), SourceContext(source_id="teams", state_dir=tmp_path)
    )


@pytest.fixture
def graph() -> Iterator[FakeTeams]:
    with FakeTeams() as fake:
        yield fake
