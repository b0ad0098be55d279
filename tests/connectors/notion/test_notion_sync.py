"""The notion connector under the real sync runner, against the fake API: pages get the
source's `access`, which may name the workspace group that `groups()` fills; an edit
arrives by the incremental search, a trashed page by enumeration; a listing failing half
way deletes nothing."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from fake_api_sync import open_workspace, use_secret
from notion_support import populate

from fakes.notion import FakeNotion
from headwater import Workspace


@pytest.fixture(autouse=True)
def _token(monkeypatch: pytest.MonkeyPatch, notion: FakeNotion) -> None:
    use_secret(monkeypatch, "HW_TEST_NOTION_TOKEN", notion.token)  # `${ENV}` in headwater.toml


def workspace(notion: FakeNotion, tmp_path: Path, extra: str = "") -> Workspace:
    return open_workspace(
        tmp_path,
        f'id = "nt"\ntype = "notion"\nbase_url = "{notion.url}"\n'
        'token = "${HW_TEST_NOTION_TOKEN}"\npage_size = 1\n'
        'access = { groups = ["nt:group:workspace"] }\n'
        f"{extra}",
    )


def test_sync_acl_edit_and_trash(notion: FakeNotion, tmp_path: Path) -> None:
    pages = populate(notion)
    with workspace(notion, tmp_path) as ws:
        first = ws.sync(index=False).runs[0]
        assert (first.status, first.counts.new) == ("succeeded", 3), first.counts
        record = ws.manifest.document_by_object("nt", f"page/{pages['row'].id}")
        assert record is not None and record.acl == ("group:nt:group:workspace",)
        assert "nt:group:workspace" in {
            g.group for g in ws.manifest.groups.groups_of("ann@example.com")
        }
        quiet = ws.sync(index=False).runs[0]
        assert quiet.fetched == 0 and quiet.counts.changed == 0, quiet.counts
        pages["child"].blocks[0]["paragraph"]["rich_text"][0]["plain_text"] = "Day one: laptop."
        pages["child"].edited = datetime(2024, 5, 1, 9, 8, tzinfo=UTC)
        pages["handbook"].archived = True  # trashed: search no longer finds it
        third = ws.sync(index=False).runs[0]
        assert (third.counts.changed, third.counts.deleted, third.fetched) == (1, 1, 1), (
            third.counts
        )


def test_a_listing_failing_half_way_deletes_nothing(notion: FakeNotion, tmp_path: Path) -> None:
    pages = populate(notion)
    with workspace(notion, tmp_path, "retry_attempts = 2\n") as ws:
        assert ws.sync(index=False).runs[0].counts.new == 3
        pages["row"].shared = False  # unshared: gone from the listing
        notion.searches, notion.search_fails_after = 0, 1
        run = ws.sync(index=False).runs[0]
        assert run.counts.deleted == 0 and run.status != "succeeded", run
        assert ws.manifest.count_documents("nt", "active") == 3
