"""The box connector against the fake API: ACLs from collaborations on the file and
inherited from folders, the owner, groups with members, changes by the event stream with
deletes, an expired stream position relisting, a 429 storm, collaborations that cannot be
read, a walk resumed mid-listing, and validate's messages."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest
from box_support import make, populate
from fake_api_checks import FakeApi, FakeApiChecks, ValidateStep

from fakes.box import FakeBox
from headwater.connectors.testing import FAR_FUTURE, collect, no_known
from headwater.errors import ConfigError, CredentialError
from headwater.types import Checkpoint, Deleted, Failure, Window

EVERYTHING = Window(None, FAR_FUTURE)


def test_acl_from_the_file_its_folders_and_the_owner(box: FakeBox, tmp_path: Path) -> None:
    ids = populate(box)
    connector = make(box, tmp_path)
    docs = {d.object_id: d for d in collect(connector.read(EVERYTHING, None, no_known)).documents}
    assert sorted(docs) == sorted([ids["notes"], ids["plan"], ids["guide"], ids["faq"]])
    notes = docs[ids["notes"]].access  # inherited from Company/ (above the folder read)
    assert notes is not None and notes.users == ("bob@example.com", "owner@example.com")
    assert notes.groups == ()
    plan = docs[ids["plan"]].access  # its own collaboration too
    assert plan is not None
    assert plan.users == ("ann@example.com", "bob@example.com", "owner@example.com")
    guide = docs[ids["guide"]]  # the group from Team/; the pending invitee left out
    assert guide.access is not None and guide.access.groups == ("box:group:g-eng",)
    assert "pending@example.com" not in guide.access.users
    assert guide.metadata["path"] == "Team/Guide.md"
    assert connector.fetch(str(guide.fetch_ref)) == b"# Guide\nShared"
    only_md = make(box, tmp_path, include=["**/*.md", "*.md"])
    assert ids["plan"] not in set(only_md.enumerate())


def test_groups_with_members(box: FakeBox, tmp_path: Path) -> None:
    populate(box)
    assert list(make(box, tmp_path).groups()) == []
    listed = list(make(box, tmp_path, list_groups=True).groups())
    assert listed == [("box:group:g-eng", ["cat@example.com", "dan@example.com"])]
    assert listed[0].display_name == "Engineering"
    box.scopes.discard("manage_groups")
    with pytest.raises(CredentialError, match=r"lacks the scope `manage_groups`"):
        list(make(box, tmp_path, list_groups=True).groups())


def test_changes_follow_the_event_stream(box: FakeBox, tmp_path: Path) -> None:
    ids = populate(box)
    first = collect(make(box, tmp_path).read(EVERYTHING, None, no_known))
    assert first.final is not None and set(json.loads(first.final.cursor)) == {"stream"}
    box.put("Company/Docs/Plan.txt", b"Plan: ship twice")
    box.trash(ids["notes"])
    new = box.put("Company/Docs/New.md", b"# New")
    box.put("Company/Other/y.md", b"outside")
    box.clear_log()
    again = collect(make(box, tmp_path).read(EVERYTHING, first.final, no_known))
    assert sorted(d.object_id for d in again.documents) == sorted([ids["plan"], new.id])
    assert Deleted(ids["notes"]) in again.items
    plan = next(d for d in again.documents if d.object_id == ids["plan"])
    before = next(d for d in first.documents if d.object_id == ids["plan"])
    assert plan.version != before.version
    assert not any(c.path.endswith("/items") for c in box.log), "an incremental run walked"
    quiet = collect(make(box, tmp_path).read(EVERYTHING, again.final, no_known))
    assert quiet.items == [] and quiet.final == again.final


def test_folder_events_re_read_the_files_under_the_folder(box: FakeBox, tmp_path: Path) -> None:
    ids = populate(box)
    first = collect(make(box, tmp_path).read(EVERYTHING, None, no_known))
    versions = {d.object_id: d.version for d in first.documents}
    box.collaborate(ids["team"], "zoe@example.com")  # a collaborator on a folder
    moved = box.folder("Company/Other")
    box.move(moved.id, ids["docs"])  # a folder moved into the folder read
    again = collect(make(box, tmp_path).read(EVERYTHING, first.final, no_known))
    docs = {d.object_id: d for d in again.documents}
    assert sorted(docs) == sorted([ids["guide"], ids["faq"], ids["other"]])
    guide = docs[ids["guide"]]
    assert guide.version == versions[ids["guide"]]  # same content: an ACL-only change
    assert guide.access is not None and "zoe@example.com" in guide.access.users
    assert docs[ids["other"]].metadata["path"] == "Other/x.md"
    box.collaborate(next(n.id for n in box.nodes.values() if n.name == "Company"), "yan@x.org")
    above = collect(make(box, tmp_path).read(EVERYTHING, again.final, no_known))
    assert len(above.documents) == 5  # a folder above the one read: every file
    assert all(d.access is not None and "yan@x.org" in d.access.users for d in above.documents)


def test_an_expired_stream_position_walks_again(box: FakeBox, tmp_path: Path) -> None:
    ids = populate(box)
    first = collect(make(box, tmp_path).read(EVERYTHING, None, no_known))
    box.trash(ids["plan"])
    box.floor = box.position + 1  # Box no longer keeps the saved position
    box.clear_log()
    again = collect(make(box, tmp_path).read(EVERYTHING, first.final, no_known))
    statuses = [(c.path, c.status) for c in box.log][:2]
    assert statuses == [("/2.0/events", 400), ("/2.0/events", 200)]
    assert sorted(d.object_id for d in again.documents) == sorted(
        [ids["notes"], ids["guide"], ids["faq"]]
    )
    assert again.final is not None and json.loads(again.final.cursor)["stream"]
    bad = Checkpoint(json.dumps({"stream": "not-a-position"}))  # refused like an expired one
    assert len(collect(make(box, tmp_path).read(EVERYTHING, bad, no_known)).documents) == 3


def test_a_walk_resumes_mid_listing(box: FakeBox, tmp_path: Path) -> None:
    populate(box)
    full = collect(make(box, tmp_path).read(EVERYTHING, None, no_known))
    checkpoints = [i for i in full.items if isinstance(i, Checkpoint)]
    assert len(checkpoints) >= 2 and all("queue" in json.loads(c.cursor) for c in checkpoints)
    middle = full.items.index(checkpoints[0])
    box.clear_log()
    resumed = collect(make(box, tmp_path).read(EVERYTHING, checkpoints[0], no_known))
    rest = [d.object_id for d in full.items[middle + 1 :] if hasattr(d, "version")]
    assert [d.object_id for d in resumed.documents] == rest
    assert box.count("/2.0/events") == 0, "a resumed walk keeps its stream position"


def test_unreadable_collaborations_fail_the_file_closed(box: FakeBox, tmp_path: Path) -> None:
    ids = populate(box)
    box.broken.add(f"/2.0/folders/{ids['team']}/collaborations")
    result = collect(make(box, tmp_path, retry_attempts=2).read(EVERYTHING, None, no_known))
    failed = sorted(i.object_id for i in result.items if isinstance(i, Failure))
    assert failed == sorted([ids["guide"], ids["faq"]])
    assert all(i.error_class == "acl_unavailable" for i in result.items if isinstance(i, Failure))
    assert sorted(d.object_id for d in result.documents) == sorted([ids["notes"], ids["plan"]])


class TestBoxApi(FakeApiChecks):
    """The shared fake-API read checks (``fake_api_checks``): a 429 storm, Retry-After,
    and validate's messages naming token, scope and folder."""

    validate_steps = (
        ValidateStep(CredentialError, r"box `token` was rejected \(HTTP 401", {"token": "nope"}),
        ValidateStep(
            CredentialError,
            r"lacks the scope `root_readonly`",
            change=lambda box: box.scopes.discard("root_readonly"),
            undo=lambda box: box.scopes.add("root_readonly"),
        ),
        ValidateStep(
            ConfigError,
            r"`folder_id` '999999' is not a folder.*404 not_found",
            {"folder_id": "999999"},
        ),
        ValidateStep(
            CredentialError,
            r"lacks the scope `manage_groups`",
            {"list_groups": True},
            change=lambda box: box.scopes.discard("manage_groups"),
        ),
    )

    @pytest.fixture
    def fake_api(self, box: FakeBox, tmp_path: Path) -> FakeApi:
        populate(box)
        return FakeApi(box, partial(make, box, tmp_path), documents=4)
