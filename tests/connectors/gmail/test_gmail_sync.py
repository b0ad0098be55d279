"""The gmail connector under the real sync runner, against the fake API: a new message
and a deleted one arrive by history; mailbox owners read their own mail only; a listing
failing half way deletes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from declared import use_declared_connectors
from fake_api_sync import open_workspace
from gmail_support import ANN, BOB, populate, raw

from fakes.gmail import FakeGmail
from headwater import Workspace


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch, gm: FakeGmail, tmp_path: Path) -> None:
    (tmp_path / "key.json").write_text(gm.key_json)
    use_declared_connectors(monkeypatch)  # the entry point pyproject.toml declares


def workspace(gm: FakeGmail, tmp_path: Path, extra: str = "") -> Workspace:
    return open_workspace(
        tmp_path,
        f'id = "gm"\ntype = "gmail"\napi_url = "{gm.url}"\nservice_account_file = "key.json"\n'
        f'users = ["{ANN}", "{BOB}"]\npage_size = 1\n{extra}',
    )


def test_sync_new_and_deleted_messages(gm: FakeGmail, tmp_path: Path) -> None:
    populate(gm)
    with workspace(gm, tmp_path) as ws:
        first = ws.sync(index=False).runs[0]
        assert (first.status, first.counts.new) == ("succeeded", 4), first.counts
        record = ws.manifest.document_by_object("gm", f"{BOB}/b1")
        assert record is not None and record.acl == (f"user:{BOB}",)
        gm.add(ANN, "a4", raw("New", "Fresh"), {"INBOX"})
        gm.remove(BOB, "b1")
        run = ws.sync(index=False).runs[0]
        assert (run.counts.new, run.counts.deleted, run.fetched) == (1, 1, 1), run.counts


def test_a_listing_failing_half_way_deletes_nothing(gm: FakeGmail, tmp_path: Path) -> None:
    populate(gm)
    with workspace(gm, tmp_path, "retry_attempts = 2\n") as ws:
        assert ws.sync(index=False).runs[0].counts.new == 4
        with gm.lock:  # gone without a history record: only a listing would show it
            del gm.mailboxes[ANN].messages["a1"]
        gm.broken.add(f"/gmail/v1/users/{BOB}/messages")  # bob's listing answers 500
        run = ws.sync(index=False).runs[0]
        assert run.counts.deleted == 0 and run.status != "succeeded", run
        assert ws.manifest.count_documents("gm", "active") == 4
