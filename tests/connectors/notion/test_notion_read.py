"""The notion connector against the fake API: Markdown rendering, incremental reads with
an overlap, archived pages, an expired cursor, a 429 storm, validate's messages and the
workspace group."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import pytest
from fake_api_checks import FakeApi, FakeApiChecks, ValidateStep
from notion_support import make, populate

from fakes.notion import FakeNotion, Page, paragraph
from headwater.connectors.testing import FAR_FUTURE, collect, no_known
from headwater.errors import ConfigError, CredentialError, ItemError
from headwater.types import Checkpoint, Deleted, Window

EVERYTHING = Window(None, FAR_FUTURE)


def test_pages_and_rows_render_to_markdown(notion: FakeNotion, tmp_path: Path) -> None:
    pages = populate(notion)
    connector = make(notion, tmp_path)
    docs = {d.object_id: d for d in collect(connector.read(EVERYTHING, None, no_known)).documents}
    assert set(docs) == {f"page/{pages[k].id}" for k in ("handbook", "child", "row")}
    handbook = docs[f"page/{pages['handbook'].id}"]
    assert (handbook.title, handbook.version) == ("Handbook", "2024-05-01T09:01:00.000Z")
    assert handbook.access is None  # the source's `access` applies: Notion shows no ACLs
    text = connector.fetch(str(handbook.fetch_ref)).decode()
    assert text == (
        "# Handbook\n\n# Welcome\nRead this first.\n- Tools\n  - Laptop\n- [ ] Sign the NDA"
    )
    row = docs[f"page/{pages['row'].id}"]
    row_path = f"db1/{pages['row'].id.replace('-', '')}"  # db-1 is not shared: the top
    assert row.metadata == {"kind": "row", "parent": "db-1", "hierarchy": row_path}
    row_text = connector.fetch(str(row.fetch_ref)).decode()
    assert row_text == "# Rotate keys\n\n- **Status**: Done\n\nEvery quarter."


def test_incremental_reads_stop_past_the_last_run(notion: FakeNotion, tmp_path: Path) -> None:
    pages = populate(notion)
    first = collect(make(notion, tmp_path).read(EVERYTHING, None, no_known))
    assert first.final is not None
    assert json.loads(first.final.cursor) == {"newest": "2024-05-01T09:03:00+00:00"}
    pages["child"].edited = datetime(2024, 5, 1, 9, 7, tzinfo=UTC)
    notion.clear_log()
    again = collect(make(notion, tmp_path).read(EVERYTHING, first.final, no_known))
    # newest first: the edited page, the row at the boundary minute, then a page older
    # than the last run's newest ends the listing
    assert [d.object_id for d in again.documents] == [
        f"page/{pages['child'].id}",
        f"page/{pages['row'].id}",
    ]
    assert notion.count("/v1/search") == 3
    assert again.final is not None
    assert json.loads(again.final.cursor) == {"newest": "2024-05-01T09:07:00+00:00"}


def test_the_overlap_relists_the_boundary(notion: FakeNotion, tmp_path: Path) -> None:
    pages = populate(notion)
    first = collect(make(notion, tmp_path, window_overlap="5m").read(EVERYTHING, None, no_known))
    again = collect(
        make(notion, tmp_path, window_overlap="5m").read(EVERYTHING, first.final, no_known)
    )
    assert len(again.documents) == 3, "five minutes back covers every page here"
    assert pages["hidden"].id not in {d.object_id for d in again.documents}


def test_archived_pages_in_the_listing_are_deleted(notion: FakeNotion, tmp_path: Path) -> None:
    pages = populate(notion)
    pages["child"].archived = True
    pages["child"].edited = datetime(2024, 5, 1, 9, 9, tzinfo=UTC)
    notion.search_shows_archived = True
    items = collect(make(notion, tmp_path).read(EVERYTHING, None, no_known)).items
    assert Deleted(f"page/{pages['child'].id}") in items
    connector = make(notion, tmp_path)
    assert f"page/{pages['child'].id}" not in set(connector.enumerate())


def test_an_expired_cursor_lists_again_from_the_top(notion: FakeNotion, tmp_path: Path) -> None:
    pages = populate(notion)
    full = collect(make(notion, tmp_path).read(EVERYTHING, None, no_known))
    mid = next(i for i in full.items if isinstance(i, Checkpoint))
    notion.expire_cursors()
    notion.clear_log()
    resumed = collect(make(notion, tmp_path).read(EVERYTHING, mid, no_known))
    assert next(c.status for c in notion.log if c.path == "/v1/search") == 400
    assert {d.object_id for d in resumed.documents} == {
        f"page/{pages[k].id}" for k in ("handbook", "child", "row")
    }


def test_groups_list_the_workspace_people(notion: FakeNotion, tmp_path: Path) -> None:
    populate(notion)
    listed = list(make(notion, tmp_path).groups())
    assert listed == [("nt:group:workspace", ["Ann@Example.com"])]
    notion.capabilities = {"read_content"}
    with pytest.raises(CredentialError, match=r"'Read user information including email"):
        list(make(notion, tmp_path).groups())


def test_deep_blocks_and_a_gone_page(notion: FakeNotion, tmp_path: Path) -> None:
    page = notion.add(
        Page(
            "Deep",
            [paragraph("a", [paragraph("b", [paragraph("c", kind="quote")])], kind="toggle")],
            datetime(2024, 5, 2, tzinfo=UTC),
        )
    )
    connector = make(notion, tmp_path)
    assert connector.fetch(page.id).decode() == "# Deep\n\n- a\n  b\n    > c"
    page.shared = False
    with pytest.raises(ItemError, match="gone or unshared"):
        connector.fetch(page.id)


def _unshare_every_page(notion: FakeNotion) -> None:
    """Share no page with the integration any more."""
    for page in notion.pages.values():
        page.shared = False


class TestNotionApi(FakeApiChecks):
    """The shared fake-API read checks (``fake_api_checks``): a 429 storm, Retry-After,
    and validate's messages naming token, capability and sharing."""

    storm_attempts = 15
    storm_fetches = True
    validate_steps = (
        ValidateStep(
            CredentialError, r"401 unauthorized; expected `token`", {"token": "secret_nope"}
        ),
        ValidateStep(
            CredentialError,
            r"restricted_resource.*'Read content'",
            change=lambda notion: setattr(notion, "capabilities", {"read_user_with_email"}),
            undo=lambda notion: setattr(
                notion, "capabilities", {"read_content", "read_user_with_email"}
            ),
        ),
        ValidateStep(
            ConfigError, r"no page is shared with the integration", change=_unshare_every_page
        ),
    )

    @pytest.fixture
    def fake_api(self, notion: FakeNotion, tmp_path: Path) -> FakeApi:
        populate(notion)
        return FakeApi(notion, partial(make, notion, tmp_path), documents=3)
