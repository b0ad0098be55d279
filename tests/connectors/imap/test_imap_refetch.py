"""The imap targeted read against Dovecot: a hint fetches exactly the named UIDs (one
EXAMINE, no SEARCH); a delete hint for a message still there deletes nothing; one for
an expunged message tombstones it; an id of another mailbox is dropped."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from hinting import hinted, state_of
from imap_support import Account, message

from headwater import Workspace
from headwater.connectors.base import SourceContext
from headwater.connectors.imap import ImapConnector, ImapOptions

SENT: Counter[str] = Counter()


class CountingImap(ImapConnector):
    """The real connector, with its command counter shared with the test."""

    def __init__(self, options: ImapOptions, context: SourceContext) -> None:
        super().__init__(options, context)
        self.commands = SENT


def _workspace(account: Account, tmp_path: Path) -> Workspace:
    config = tmp_path / "headwater.toml"
    config.write_text(
        '[workspace]\ntenant = "acme"\nstate_dir = "state"\n'
        '[embedder]\ntype = "fake"\ndimension = 32\n'
        '[[index]]\nname = "main"\ntype = "sqlite"\n'
        f'[[source]]\nid = "mail"\ntype = "imap"\nhost = "127.0.0.1"\nport = {account.port}\n'
        f'ssl = false\nusername = "{account.username}"\npassword = "${{HW_IMAP_PASSWORD}}"\n'
        'mailboxes = ["INBOX"]\naccess = { users = ["bob@example.org"] }\n'
    )
    return Workspace.open(config, connector_types={"imap": CountingImap})


@pytest.fixture(autouse=True)
def _password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HW_IMAP_PASSWORD", "s3cret-pass")
    SENT.clear()


def _ids(ws: Workspace) -> list[str]:
    found = ws.manifest.documents_after("", 1000)
    return sorted(d.object_id for d in found if d.source_id == "mail" and d.state == "active")


def test_a_hint_fetches_exactly_its_message(account: Account, tmp_path: Path) -> None:
    for i in range(3):
        account.append("INBOX", message(f"Note {i}", f"Body {i}.\n"))
    with _workspace(account, tmp_path) as ws:
        ws.sync(index=False)
        first = _ids(ws)[0]
        validity = first.split("/")[1]
        uid = account.append("INBOX", message("Fresh", "A new message.\n"))
        SENT.clear()
        read = hinted(ws, "mail", [f"INBOX/{validity}/{uid}"])
        assert read.counts is not None and read.counts["new"] == 1, read
        assert Counter({"LOGIN": 1, "EXAMINE": 1, "FETCH": 2}) == SENT, SENT  # no SEARCH
        SENT.clear()
        again = hinted(ws, "mail", [first])
        assert again.counts is not None and again.counts["unchanged"] == 1, again
        assert state_of(ws, "mail", f"INBOX/{validity}/{uid}") == ("active", 1)


def test_a_delete_hint_for_a_message_still_there_deletes_nothing(
    account: Account, tmp_path: Path
) -> None:
    account.append("INBOX", message("Keep", "Still here.\n"))
    with _workspace(account, tmp_path) as ws:
        ws.sync(index=False)
        (kept,) = _ids(ws)
        read = hinted(ws, "mail", [kept], deleted=True)
        assert read.counts is not None and read.counts["deleted"] == 0
        assert state_of(ws, "mail", kept) == ("active", 1)


def test_a_delete_hint_for_an_expunged_message_tombstones_it(
    account: Account, tmp_path: Path
) -> None:
    uids = [account.append("INBOX", message(f"Note {i}", f"Body {i}.\n")) for i in range(2)]
    with _workspace(account, tmp_path) as ws:
        ws.sync(index=False)
        gone = next(i for i in _ids(ws) if i.endswith(f"/{uids[0]}"))
        account.expunge("INBOX", uids[0])
        SENT.clear()
        read = hinted(ws, "mail", [gone], deleted=True)
        assert read.counts is not None and read.counts["deleted"] == 1, read
        state = state_of(ws, "mail", gone)
        assert state is not None and state[0] != "active"
        assert SENT["SEARCH"] == 0


def test_an_id_of_another_mailbox_is_dropped(account: Account, tmp_path: Path) -> None:
    account.append("INBOX", message("Keep", "Still here.\n"))
    with _workspace(account, tmp_path) as ws:
        ws.sync(index=False)
        (kept,) = _ids(ws)
        read = hinted(ws, "mail", ["Archive/1/1", kept, "INBOX/not-a-uid"])
        assert read.dropped == 2
