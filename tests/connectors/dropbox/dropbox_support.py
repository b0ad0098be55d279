"""Shared setup for the dropbox tests: a populated fake API and connector builders."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fakes.dropbox import FakeDropbox
from headwater.connectors.base import SourceContext
from headwater.connectors.dropbox import DropboxConnector, DropboxOptions


def populate(dbx: FakeDropbox) -> None:
    """Private notes of the owner, and a shared folder with a user, a group and an invitee."""
    dbx.shared["sf1"] = {
        "users": [("owner@example.com", "owner"), ("ann@example.com", "editor")],
        "groups": ["g:eng"],
        "invitees": ["pending@example.com"],
    }
    dbx.team_groups["g:eng"] = {"name": "Engineering", "emails": ["cat@example.com"]}
    dbx.put("/Docs/Notes.md", b"# Notes\nPrivate")
    dbx.put("/Docs/Plan.txt", b"Plan: ship")
    dbx.put("/Docs/Team/Guide.md", b"# Guide\nShared", shared_folder="sf1")
    dbx.put("/Docs/Team/FAQ.md", b"# FAQ\nAsk", shared_folder="sf1")
    dbx.put("/Other/x.md", b"outside the folder")


def make(dbx: FakeDropbox, tmp_path: Path, **overrides: Any) -> DropboxConnector:
    values: dict[str, Any] = {
        "token": dbx.token,
        "path": "/Docs",
        "api_url": dbx.url,
        "content_url": dbx.url,
        "page_size": 2,
        "retry_attempts": 3,
        "retry_initial_wait": 0.0,
        "retry_max_wait": 0.0,
    } | overrides
    return DropboxConnector(
        DropboxOptions(**values), SourceContext(source_id="dbx", state_dir=tmp_path)
    )


@pytest.fixture
def dbx() -> Iterator[FakeDropbox]:
    with FakeDropbox() as fake:
        yield fake
