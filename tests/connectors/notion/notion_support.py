"""Shared setup for the notion tests: a populated fake API and connector builders."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from fakes.notion import FakeNotion, Page, paragraph
from headwater.connectors.base import SourceContext
from headwater.connectors.notion import NotionConnector, NotionOptions

T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)


def populate(notion: FakeNotion) -> dict[str, Page]:
    """A workspace page with nested blocks, its child page, a database row, and a page
    not shared with the integration."""
    notion.people = [
        {"object": "user", "id": "u1", "type": "person", "name": "Ann",
         "person": {"email": "Ann@Example.com"}},
        {"object": "user", "id": "u2", "type": "person", "name": "Bob", "person": {}},
    ]  # fmt: skip
    handbook = notion.add(
        Page(
            "Handbook",
            [
                paragraph("Welcome", kind="heading_1"),
                paragraph("Read this first."),
                paragraph(
                    "Tools",
                    [paragraph("Laptop", kind="bulleted_list_item")],
                    kind="bulleted_list_item",
                ),
                paragraph("Sign the NDA", kind="to_do"),
            ],
            T0.replace(minute=1),
        )
    )
    child = notion.add(
        Page(
            "Onboarding",
            [paragraph("Day one: accounts.")],
            T0.replace(minute=2),
            parent={"type": "page_id", "page_id": handbook.id},
        )
    )
    row = notion.add(
        Page(
            "Rotate keys",
            [paragraph("Every quarter.")],
            T0.replace(minute=3),
            parent={"type": "database_id", "database_id": "db-1"},
            properties={"Status": {"type": "select", "select": {"name": "Done"}}},
        )
    )
    hidden = notion.add(Page("Private", [paragraph("Not shared")], T0, shared=False))
    return {"handbook": handbook, "child": child, "row": row, "hidden": hidden}


def make(notion: FakeNotion, tmp_path: Path, **overrides: Any) -> NotionConnector:
    values: dict[str, Any] = {
        "base_url": notion.url,
        "token": notion.token,
        "page_size": 1,
        "window_overlap": "0s",
        "retry_attempts": 3,
        "retry_initial_wait": 0.0,
        "retry_max_wait": 0.0,
    } | overrides
    return NotionConnector(
        NotionOptions(**values), SourceContext(source_id="nt", state_dir=tmp_path)
    )


@pytest.fixture
def notion() -> Iterator[FakeNotion]:
    with FakeNotion() as fake:
        yield fake
