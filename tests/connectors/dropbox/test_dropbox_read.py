"""The dropbox connector against the fake API: ACLs from shared folders and the owner,
team groups, changes by cursor with deletes, a reset cursor relisting, a 429 storm, an
ACL that cannot be read, and validate's messages."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest
from dropbox_support import make, populate
from fake_api_checks import FakeApi, FakeApiChecks, ValidateStep

from fakes.dropbox import FakeDropbox
from headwater.connectors.testing import FAR_FUTURE, collect, no_known
from headwater.errors import ConfigError, CredentialError
from headwater.types import Deleted, Failure, Window

EVERYTHING = Window(None, FAR_FUTURE)


def test_acl_from_shared_folders_and_the_owner(dbx: FakeDropbox, tmp_path: Path) -> None:
    populate(dbx)
    connector = make(dbx, tmp_path)
    docs = {d.object_id: d for d in collect(connector.read(EVERYTHING, None, no_known)).documents}
    assert sorted(docs) == [
        "/docs/notes.md",
        "/docs/plan.txt",
        "/docs/team/faq.md",
        "/docs/team/guide.md",
    ]
    private = docs["/docs/notes.md"].access
    assert private is not None and private.users == ("owner@example.com",)
    shared = docs["/docs/team/guide.md"].access
    assert shared is not None  # the pending invitee cannot open it yet: left out
    assert shared.users == ("ann@example.com", "owner@example.com")
    assert shared.groups == ("dbx:group:group:g:eng",)
    guide = docs["/docs/team/guide.md"]
    assert connector.fetch(str(guide.fetch_ref)) == b"# Guide\nShared"
    assert make(dbx, tmp_path, include=["**/*.md"]).in_scope("/docs/plan.txt") is False


def test_team_groups(dbx: FakeDropbox, tmp_path: Path) -> None:
    populate(dbx)
    assert list(make(dbx, tmp_path).groups()) == []
    listed = list(make(dbx, tmp_path, team_groups=True).groups())
    assert listed == [("dbx:group:group:g:eng", ["cat@example.com"])]
    assert listed[0].display_name == "Engineering"


def test_changes_follow_the_cursor(dbx: FakeDropbox, tmp_path: Path) -> None:
    populate(dbx)
    first = collect(make(dbx, tmp_path).read(EVERYTHING, None, no_known))
    dbx.put("/Docs/Plan.txt", b"Plan: ship twice")
    dbx.delete("/Docs/Notes.md")
    dbx.put("/Docs/New.md", b"# New")
    dbx.put("/Other/y.md", b"outside")
    dbx.clear_log()
    again = collect(make(dbx, tmp_path).read(EVERYTHING, first.final, no_known))
    assert again.object_ids == ["/docs/new.md", "/docs/notes.md", "/docs/plan.txt"]
    assert Deleted("/docs/notes.md") in again.items
    assert [c.path for c in dbx.log] == [
        "/2/files/list_folder/continue",
        "/2/users/get_current_account",
    ]


def test_a_reset_cursor_lists_again(dbx: FakeDropbox, tmp_path: Path) -> None:
    populate(dbx)
    first = collect(make(dbx, tmp_path).read(EVERYTHING, None, no_known))
    dbx.reset_cursors()
    dbx.delete("/Docs/Plan.txt")
    dbx.clear_log()
    again = collect(make(dbx, tmp_path).read(EVERYTHING, first.final, no_known))
    statuses = [(c.path, c.status) for c in dbx.log if c.path.startswith("/2/files/list")]
    assert statuses[:2] == [("/2/files/list_folder/continue", 409), ("/2/files/list_folder", 200)]
    assert sorted(d.object_id for d in again.documents) == [
        "/docs/notes.md",
        "/docs/team/faq.md",
        "/docs/team/guide.md",
    ]
    assert again.final is not None and json.loads(again.final.cursor)["cursor"]


def test_an_unreadable_shared_folder_fails_its_files_closed(
    dbx: FakeDropbox, tmp_path: Path
) -> None:
    populate(dbx)
    dbx.broken.add("/2/sharing/list_folder_members")
    result = collect(make(dbx, tmp_path, retry_attempts=2).read(EVERYTHING, None, no_known))
    failed = sorted(i.object_id for i in result.items if isinstance(i, Failure))
    assert failed == ["/docs/team/faq.md", "/docs/team/guide.md"]
    assert sorted(d.object_id for d in result.documents) == ["/docs/notes.md", "/docs/plan.txt"]


class TestDropboxApi(FakeApiChecks):
    """The shared fake-API read checks (``fake_api_checks``): a 429 storm, Retry-After,
    and validate's messages naming token, scope and path."""

    validate_steps = (
        ValidateStep(
            CredentialError, r"invalid_access_token; expected `token`", {"token": "sl.nope"}
        ),
        ValidateStep(
            CredentialError,
            r"lacks the scope `files.metadata.read`",
            change=lambda dbx: dbx.scopes.discard("files.metadata.read"),
            undo=lambda dbx: dbx.scopes.add("files.metadata.read"),
        ),
        ValidateStep(
            ConfigError, r"`path`: '/Nope' is not a folder.*path/not_found", {"path": "/Nope"}
        ),
    )

    @pytest.fixture
    def fake_api(self, dbx: FakeDropbox, tmp_path: Path) -> FakeApi:
        populate(dbx)
        return FakeApi(dbx, partial(make, dbx, tmp_path), documents=4)
