"""Shared setup for the box tests: a populated fake API and connector builders."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fakes.box import FakeBox
from headwater.connectors.base import SourceContext
from headwater.connectors.box import BoxConnector, BoxOptions


def populate(box: FakeBox) -> dict[str, str]:
    """Docs/ with a private note, a plan shared with ann, and Docs/Team/ shared with the
    Engineering group (plus a pending invitee), inside Company/ shared with bob; ids by name."""
    box.groups["g-eng"] = ("Engineering", ["cat@example.com", "dan@example.com"])
    company = box.folder("Company")
    docs = box.folder("Company/Docs")
    team = box.folder("Company/Docs/Team")
    notes = box.put("Company/Docs/Notes.md", b"# Notes\nPrivate")
    plan = box.put("Company/Docs/Plan.txt", b"Plan: ship")
    guide = box.put("Company/Docs/Team/Guide.md", b"# Guide\nShared")
    faq = box.put("Company/Docs/Team/FAQ.md", b"# FAQ\nAsk")
    other = box.put("Company/Other/x.md", b"outside the folder")
    box.collaborate(company.id, "bob@example.com")
    box.collaborate(plan.id, "ann@example.com")
    box.collaborate(team.id, "g-eng", group=True)
    box.collaborate(team.id, "pending@example.com", pending=True)
    return {
        "docs": docs.id, "team": team.id, "notes": notes.id, "plan": plan.id,
        "guide": guide.id, "faq": faq.id, "other": other.id,
    }  # fmt: skip


def make(box: FakeBox, tmp_path: Path, **overrides: Any) -> BoxConnector:
    folder = next(n.id for n in box.nodes.values() if n.name == "Docs")
    values: dict[str, Any] = {
        "token": box.token,
        "folder_id": folder,
        "api_url": box.url,
        "page_size": 2,
        "retry_attempts": 3,
        "retry_initial_wait": 0.0,
        "retry_max_wait": 0.0,
    } | overrides
    return BoxConnector(BoxOptions(**values), SourceContext(source_id="box", state_dir=tmp_path))


@pytest.fixture
def box() -> Iterator[FakeBox]:
    with FakeBox() as fake:
        yield fake
