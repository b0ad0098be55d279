"""Notion keeps ``last_edited_time`` to the minute, so two edits inside one minute carry
the same time: a page read while its minute is still open is read again by the next run
(its version names the read time) and the checksum decides, and the saved bound stays at
that minute so the run after it closes lists the page again. Found by the 500-item round
trip (tests/roundtrip): an edit made in the minute of the last sync was skipped for good.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fake_api_sync import open_workspace, use_secret
from notion_support import make

from fakes.notion import FakeNotion, Page, paragraph
from headwater.connectors.testing import FAR_FUTURE, collect, no_known
from headwater.types import Window


@pytest.fixture(autouse=True)
def _token(monkeypatch: pytest.MonkeyPatch, notion: FakeNotion) -> None:
    use_secret(monkeypatch, "HW_TEST_NOTION_TOKEN", notion.token)


def test_an_edit_inside_the_minute_of_the_last_sync_arrives(
    notion: FakeNotion, tmp_path: Path
) -> None:
    minute = datetime.now(UTC).replace(second=0, microsecond=0)
    page = notion.add(Page("Plan", [paragraph("Ship on Monday.")], minute))
    old = notion.add(Page("Old", [paragraph("Settled.")], minute - timedelta(hours=1)))
    source = (
        f'id = "nt"\ntype = "notion"\nbase_url = "{notion.url}"\n'
        'token = "${HW_TEST_NOTION_TOKEN}"\naccess = { public = true }\n'
    )
    with open_workspace(tmp_path, source) as ws:
        assert ws.sync().runs[0].counts.new == 2
        quiet = ws.sync().runs[0]  # the open page is read again; its text is the same
        assert (quiet.counts.changed, quiet.fetched) == (0, 1), quiet.counts
        page.blocks = [paragraph("Ship on Tuesday.")]  # the same minute: the same time
        second = ws.sync().runs[0]
        assert (second.counts.changed, second.fetched) == (1, 1), second.counts
        hits = ws.search("Tuesday", mode="keyword", k=1)
        assert hits and "Ship on Tuesday" in hits[0]["chunk"]
        record = ws.manifest.document_by_object("nt", f"page/{old.id}")
        closed = old.edited.strftime("%Y-%m-%dT%H:%M:00.000Z")
        assert record is not None and record.source_version == closed  # no read time in it


def test_the_saved_bound_waits_for_an_open_minute(notion: FakeNotion, tmp_path: Path) -> None:
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    notion.add(Page("Open", [paragraph("a")], now))
    # Notion's clock a few minutes ahead of this host: a page dated after the open one
    notion.add(Page("Ahead", [paragraph("b")], now + timedelta(minutes=5)))
    read = collect(make(notion, tmp_path).read(Window(None, FAR_FUTURE), None, no_known))
    assert read.final is not None
    assert json.loads(read.final.cursor) == {"newest": now.isoformat()}
