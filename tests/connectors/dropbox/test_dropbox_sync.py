"""The dropbox connector under the real sync runner, against the fake API: an edit and a
delete arrive by the cursor, a file under a deleted folder by enumeration; a listing
failing half way deletes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from dropbox_support import populate
from fake_api_sync import open_workspace, use_secret

from fakes.dropbox import FakeDropbox
from headwater import Workspace
from headwater.scopes import HIERARCHY_KEY, Scope


@pytest.fixture(autouse=True)
def _token(monkeypatch: pytest.MonkeyPatch, dbx: FakeDropbox) -> None:
    use_secret(monkeypatch, "HW_TEST_DROPBOX_TOKEN", dbx.token)  # `${ENV}` in headwater.toml


def workspace(dbx: FakeDropbox, tmp_path: Path, extra: str = "") -> Workspace:
    return open_workspace(
        tmp_path,
        f'id = "dbx"\ntype = "dropbox"\napi_url = "{dbx.url}"\ncontent_url = "{dbx.url}"\n'
        'token = "${HW_TEST_DROPBOX_TOKEN}"\npath = "/Docs"\npage_size = 2\nteam_groups = true\n'
        f"{extra}",
    )


def test_sync_edit_delete_and_group_readers(dbx: FakeDropbox, tmp_path: Path) -> None:
    populate(dbx)
    with workspace(dbx, tmp_path) as ws:
        first = ws.sync(index=False).runs[0]
        assert (first.status, first.counts.new) == ("succeeded", 4), first.counts
        record = ws.manifest.document_by_object("dbx", "/docs/team/guide.md")
        assert record is not None
        assert "group:dbx:group:group:g:eng" in record.acl
        cat = {g.group for g in ws.manifest.groups.groups_of("cat@example.com")}
        assert "dbx:group:group:g:eng" in cat
        quiet = ws.sync(index=False).runs[0]
        assert quiet.fetched == 0 and quiet.counts.changed == 0, quiet.counts
        dbx.put("/Docs/Plan.txt", b"Plan: ship twice")
        dbx.delete("/Docs/Notes.md")
        run = ws.sync(index=False).runs[0]
        assert (run.counts.changed, run.counts.deleted, run.fetched) == (1, 1, 1), run.counts


def test_a_listing_failing_half_way_deletes_nothing(dbx: FakeDropbox, tmp_path: Path) -> None:
    populate(dbx)
    with workspace(dbx, tmp_path, "retry_attempts = 2\n") as ws:
        assert ws.sync(index=False).runs[0].counts.new == 4
        with dbx.lock:  # gone without a change record the cursor would show
            del dbx.files["/docs/plan.txt"]
        dbx.broken.add("/2/files/list_folder/continue")  # every page after the first
        run = ws.sync(index=False).runs[0]
        assert run.counts.deleted == 0 and run.status != "succeeded", run
        assert ws.manifest.count_documents("dbx", "active") == 4


def test_hierarchy_is_the_display_path_and_scopes_a_search(
    dbx: FakeDropbox, tmp_path: Path
) -> None:
    dbx.put("/Docs/Team/Guide.md", b"# Guide\ngranite inside")
    dbx.put("/Docs/Team-old/Old.md", b"# Old\ngranite beside")
    dbx.put("/Docs/Top.md", b"# Top\ngranite above")
    with workspace(dbx, tmp_path) as ws:
        assert ws.sync().runs[0].status == "succeeded"
        record = ws.manifest.document_by_object("dbx", "/docs/team/guide.md")
        assert record is not None and record.metadata[HIERARCHY_KEY] == "Docs/Team/Guide.md"
        owner = "owner@example.com"
        found = ws.search("granite", k=10, user=owner, scopes=[Scope("dbx", "Docs/Team")])
        assert [r.locator.rsplit("/", 1)[-1] for r in found] == ["Guide.md"]
        wide = ws.search("granite", k=10, user=owner, scopes=[Scope("dbx", "Docs")])
        assert len(wide) == 3
