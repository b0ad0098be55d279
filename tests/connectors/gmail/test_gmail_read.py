"""The gmail connector against the fake API: owner and delegate ACLs, history with adds,
deletes and label changes, an expired historyId relisting, a 429 storm and validate's
messages."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest
from fake_api_checks import FakeApi, FakeApiChecks, ValidateStep
from gmail_support import ANN, BOB, make, populate, raw

from fakes.gmail import FakeGmail
from headwater.connectors.testing import FAR_FUTURE, collect, no_known
from headwater.errors import ConfigError, CredentialError
from headwater.types import Deleted, Window

EVERYTHING = Window(None, FAR_FUTURE)


def test_messages_owner_and_delegates(gm: FakeGmail, tmp_path: Path) -> None:
    populate(gm)
    connector = make(gm, tmp_path, delegates={BOB: ["assistant@acme.com"]})
    result = collect(connector.read(EVERYTHING, None, no_known))
    docs = {d.object_id: d for d in result.documents}
    assert sorted(docs) == [f"{ANN}/a1", f"{ANN}/a2", f"{BOB}/b1", f"{BOB}/b2"]  # no spam
    ann = docs[f"{ANN}/a1"].access
    assert ann is not None and ann.users == (ANN,)
    bob = docs[f"{BOB}/b1"].access
    assert bob is not None and bob.users == ("assistant@acme.com", BOB)
    assert connector.fetch(f"{ANN}/a1") == raw("Welcome", "Hello Ann")
    assert docs[f"{ANN}/a1"].media_type == "message/rfc822"
    assert result.final is not None
    assert json.loads(result.final.cursor) == {"users": {ANN: "1003", BOB: "1002"}}


def test_history_brings_adds_and_deletes(gm: FakeGmail, tmp_path: Path) -> None:
    populate(gm)
    first = collect(make(gm, tmp_path).read(EVERYTHING, None, no_known))
    gm.add(ANN, "a4", raw("New", "Fresh"), {"INBOX"})
    gm.add(ANN, "a5", raw("Draft", "wip"), {"DRAFT"})
    gm.remove(BOB, "b1")
    gm.clear_log()
    again = collect(make(gm, tmp_path).read(EVERYTHING, first.final, no_known))
    assert again.object_ids == [f"{ANN}/a4", f"{BOB}/b1"]
    assert Deleted(f"{BOB}/b1") in again.items
    assert not any(c.path.endswith("/messages") for c in gm.log), "history, not a listing"
    assert again.final is not None
    assert json.loads(again.final.cursor) == {"users": {ANN: "1005", BOB: "1003"}}


def test_a_label_follows_labels_added_and_removed(gm: FakeGmail, tmp_path: Path) -> None:
    populate(gm)
    first = collect(make(gm, tmp_path, label="INBOX").read(EVERYTHING, None, no_known))
    assert sorted(first.object_ids) == [f"{ANN}/a1", f"{BOB}/b1", f"{BOB}/b2"]
    gm.relabel(ANN, "a2", {"INBOX"}, set())  # moved into the inbox
    gm.relabel(BOB, "b2", set(), {"INBOX"})  # archived
    again = collect(make(gm, tmp_path, label="INBOX").read(EVERYTHING, first.final, no_known))
    assert again.object_ids == [f"{ANN}/a2", f"{BOB}/b2"]
    assert Deleted(f"{BOB}/b2") in again.items
    ids = set(make(gm, tmp_path, label="INBOX").enumerate())
    assert ids == {f"{ANN}/a1", f"{ANN}/a2", f"{BOB}/b1"}


def test_an_expired_history_id_lists_the_mailbox_again(gm: FakeGmail, tmp_path: Path) -> None:
    populate(gm)
    first = collect(make(gm, tmp_path).read(EVERYTHING, None, no_known))
    gm.add(ANN, "a4", raw("New", "Fresh"), {"INBOX"})
    gm.mailboxes[ANN].oldest_kept = 1004  # Gmail kept no history that old
    gm.clear_log()
    again = collect(make(gm, tmp_path).read(EVERYTHING, first.final, no_known))
    history = [c.status for c in gm.log if c.path == f"/gmail/v1/users/{ANN}/history"]
    assert history == [404]
    assert [o for o in again.object_ids if o.startswith(ANN)] == [
        f"{ANN}/a4",
        f"{ANN}/a2",
        f"{ANN}/a1",
    ]
    assert again.final is not None
    assert json.loads(again.final.cursor)["users"][ANN] == "1004"


class TestGmailApi(FakeApiChecks):
    """The shared fake-API read checks (``fake_api_checks``): a 429 storm, Retry-After,
    and validate's messages naming delegation, user and key."""

    validate_steps = (
        ValidateStep(
            ConfigError, r"`users`: 'eve@acme.com' was refused", {"users": ["eve@acme.com"]}
        ),
        ValidateStep(
            CredentialError,
            r"unauthorized_client.*domain-wide delegation",
            change=lambda gm: setattr(gm, "delegated", False),
        ),
        ValidateStep(
            ConfigError,
            r"not a service-account key",
            {"service_account_json": '{"client_email": "x"}'},
            at_build=True,
        ),
        ValidateStep(ConfigError, r"exactly one of", {"service_account_json": None}, at_build=True),
    )

    @pytest.fixture
    def fake_api(self, gm: FakeGmail, tmp_path: Path) -> FakeApi:
        populate(gm)
        return FakeApi(gm, partial(make, gm, tmp_path), documents=4)
