"""A full listing costs the fake Notion work in proportion to the pages, not their square.

The round-trip benchmark lists thousands of pages through ``POST /v1/search``; a fake
that formatted, sorted and rendered every shared page on every call made that listing
quadratic. These tests count what the fake does for one ``enumerate()`` (searches sent,
page objects rendered, minutes formatted), and check the search order is unchanged:
``last_edited_time`` to the minute, then the page id, over the pages as they are now.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from notion_support import make

import fakes.notion
from fakes.notion import FakeNotion, Page, minute, paragraph

T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
SEARCH = {"sort": {"timestamp": "last_edited_time", "direction": "descending"}}


def test_a_listing_renders_and_sorts_each_page_once(
    notion: FakeNotion, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """350 pages in four searches of 100: 350 page objects rendered and 3 × 350 minutes
    formatted (one to sort, two in the page object), not four times as many."""
    for i in range(350):
        notion.add(Page(f"Item {i}", [paragraph("body")], T0 + timedelta(seconds=i)))
    rendered: list[str] = []
    render = notion._page_json

    def counted(page: Page) -> dict[str, Any]:
        rendered.append(page.id)
        return render(page)

    formatted: list[datetime] = []

    def counted_minute(moment: datetime) -> str:
        formatted.append(moment)
        return minute(moment)

    monkeypatch.setattr(notion, "_page_json", counted)
    monkeypatch.setattr(fakes.notion, "minute", counted_minute)
    listed = list(make(notion, tmp_path).enumerate())
    assert len(listed) == 350 == len(set(listed))
    assert notion.count("/v1/search") == 4
    assert sorted(rendered) == sorted(p.id for p in notion.pages.values())
    assert len(formatted) == 3 * 350


@pytest.mark.parametrize("direction", ["descending", "ascending"])
def test_search_orders_by_the_minute_then_the_id(notion: FakeNotion, direction: str) -> None:
    """Seconds inside a minute and the writer's time zone do not change the order."""
    east = timezone(timedelta(hours=5, minutes=30))
    moments = [
        T0 + timedelta(seconds=59),
        T0,
        T0 + timedelta(seconds=1),
        (T0 + timedelta(minutes=1, seconds=30)).astimezone(east),
        (T0 - timedelta(seconds=1)).astimezone(east),
        T0 + timedelta(minutes=1),
    ]
    pages = [notion.add(Page(f"P{i}", [], moment)) for i, moment in enumerate(moments)]
    body = {"sort": {"timestamp": "last_edited_time", "direction": direction}, "page_size": 100}
    answer = notion._search(body)
    expected = sorted(
        pages, key=lambda p: (minute(p.edited), p.id), reverse=direction == "descending"
    )
    assert [r["id"] for r in answer.body["results"]] == [p.id for p in expected]


def test_a_cursor_continues_over_the_pages_as_they_are_now(notion: FakeNotion) -> None:
    """A cursor is an offset into the current order: an edit, a trashed page or a page
    added between two calls of a listing shows in the next call."""
    a, b, c = (
        notion.add(Page(name, [], T0 + timedelta(minutes=i))) for i, name in enumerate("abc")
    )
    first = notion._search(SEARCH | {"page_size": 1}).body
    assert [r["id"] for r in first["results"]] == [c.id]
    a.edited = T0 + timedelta(minutes=5)  # now a, c, b
    after_edit = notion._search(SEARCH | {"page_size": 1, "start_cursor": first["next_cursor"]})
    assert [r["id"] for r in after_edit.body["results"]] == [c.id]
    c.archived = True  # now a, b
    after_trash = notion._search(SEARCH | {"page_size": 1, "start_cursor": first["next_cursor"]})
    assert [r["id"] for r in after_trash.body["results"]] == [b.id]
    d = notion.add(Page("d", [], T0 + timedelta(minutes=9)))  # now d, a, b
    del notion.pages[b.id]  # now d, a
    after_add = notion._search(SEARCH | {"page_size": 1, "start_cursor": first["next_cursor"]})
    assert [r["id"] for r in after_add.body["results"]] == [a.id]
    assert [r["id"] for r in notion._search(SEARCH | {"page_size": 5}).body["results"]] == [
        d.id,
        a.id,
    ]
