"""The box connector under the real sync runner, against the fake API: an edit and a
delete arrive by the event stream, group readers resolve through groups(); a listing
failing half way deletes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from box_support import populate
from fake_api_sync import open_workspace, use_secret

from fakes.box import FakeBox
from headwater import Workspace
from headwater.scopes import HIERARCHY_KEY, Scope


@pytest.fixture(autouse=True)
def _token(monkeypatch: pytest.MonkeyPatch, box: FakeBox) -> None:
    use_secret(monkeypatch, "HW_TEST_BOX_TOKEN", box.token)  # `${ENV}` in headwater.toml


def workspace(box: FakeBox, tmp_path: Path, folder: str, extra: str = "") -> Workspace:
    return open_workspace(
        tmp_path,
        f'id = "box"\ntype = "box"\napi_url = "{box.url}"\ntoken = "${{HW_TEST_BOX_TOKEN}}"\n'
        f'folder_id = "{folder}"\npage_size = 2\nlist_groups = true\n{extra}',
    )


def test_sync_edit_delete_and_group_readers(box: FakeBox, tmp_path: Path) -> None:
    ids = populate(box)
    with workspace(box, tmp_path, ids["docs"]) as ws:
        first = ws.sync(index=False).runs[0]
        assert (first.status, first.counts.new) == ("succeeded", 4), first.counts
        record = ws.manifest.document_by_object("box", ids["guide"])
        assert record is not None and "group:box:group:g-eng" in record.acl
        cat = {g.group for g in ws.manifest.groups.groups_of("cat@example.com")}
        assert "box:group:g-eng" in cat
        quiet = ws.sync(index=False).runs[0]
        assert quiet.fetched == 0 and quiet.counts.changed == 0, quiet.counts
        box.put("Company/Docs/Plan.txt", b"Plan: ship twice")
        box.trash(ids["notes"])
        run = ws.sync(index=False).runs[0]
        assert (run.counts.changed, run.counts.deleted, run.fetched) == (1, 1, 1), run.counts


def test_a_listing_failing_half_way_deletes_nothing(box: FakeBox, tmp_path: Path) -> None:
    ids = populate(box)
    with workspace(box, tmp_path, ids["docs"], "retry_attempts = 2\n") as ws:
        assert ws.sync(index=False).runs[0].counts.new == 4
        with box.lock:  # gone without an event the stream would show
            del box.nodes[ids["plan"]]
        box.broken.add(f"/2.0/folders/{ids['team']}/items")  # the walk breaks half way
        run = ws.sync(index=False).runs[0]
        assert run.counts.deleted == 0 and run.status != "succeeded", run
        assert ws.manifest.count_documents("box", "active") == 4


def test_hierarchy_below_the_folder_scopes_a_search(box: FakeBox, tmp_path: Path) -> None:
    """The walk's path and, for a file an event names, its path_collection below the
    configured folder give the same kind of path; a scope finds only what lies under it."""
    ids = populate(box)
    box.put("Company/Docs/Team/Guide.md", b"# Guide\ngranite inside")
    with workspace(box, tmp_path, ids["docs"]) as ws:
        assert ws.sync().runs[0].status == "succeeded"
        record = ws.manifest.document_by_object("box", ids["guide"])
        assert record is not None and record.metadata[HIERARCHY_KEY] == "Team/Guide.md"
        beside = box.put("Company/Docs/Team-old/Old.md", b"# Old\ngranite beside")
        inside = box.put("Company/Docs/Team/Deep/New.md", b"# New\ngranite deeper")
        assert ws.sync().runs[0].status == "succeeded"  # both arrive by the event stream
        record = ws.manifest.document_by_object("box", inside.id)
        assert record is not None and record.metadata[HIERARCHY_KEY] == "Team/Deep/New.md"
        record = ws.manifest.document_by_object("box", beside.id)
        assert record is not None and record.metadata[HIERARCHY_KEY] == "Team-old/Old.md"
        bob = "bob@example.com"  # a collaborator on Company/, inherited by everything
        found = ws.search("granite", k=10, user=bob, scopes=[Scope("box", "Team")])
        assert sorted(r.locator for r in found) == sorted(
            f"https://app.box.com/file/{i}" for i in (ids["guide"], inside.id)
        )
        wide = ws.search("granite", k=10, user=bob, scopes=[Scope("box", "")])
        assert len(wide) == 3
