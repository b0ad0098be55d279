"""The imap connector under the real sync runner, against Dovecot: a no-op re-sync reads
no message, a new message is added, an expunged one is deleted by enumeration, and a
mailbox that cannot be listed deletes nothing."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
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


def _workspace(account: Account, tmp_path: Path, mailboxes: str) -> Workspace:
    config = tmp_path / "headwater.toml"
    config.write_text(
        '[workspace]\ntenant = "acme"\nstate_dir = "state"\n'
        '[embedder]\ntype = "fake"\ndimension = 32\n'
        '[[index]]\nname = "main"\ntype = "sqlite"\n'
        f'[[source]]\nid = "mail"\ntype = "imap"\nhost = "127.0.0.1"\nport = {account.port}\n'
        f'ssl = false\nusername = "{account.username}"\npassword = "${{HW_IMAP_PASSWORD}}"\n'
        f"mailboxes = {mailboxes}\nprune_max_fraction = 0.9\n"
        'access = { users = ["bob@example.org"] }\n'
    )
    return Workspace.open(config, connector_types={"imap": CountingImap})


def _titles(ws: Workspace) -> set[str]:
    return {str(h["title"]) for h in ws.search("Body", user="bob@example.org", mode="keyword")}


@pytest.fixture(autouse=True)
def _password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HW_IMAP_PASSWORD", "s3cret-pass")
    SENT.clear()


def test_sync_reads_only_new_messages_and_prunes_expunged(account: Account, tmp_path: Path) -> None:
    uids = [account.append("INBOX", message(f"Note {i}", f"Body {i}.\n")) for i in range(3)]
    with _workspace(account, tmp_path, '["INBOX"]') as ws:
        first = ws.sync().runs[0]
        assert (first.status, first.counts.new) == ("succeeded", 3)
        assert b"\\Seen" not in account.flags("INBOX", uids[0]), "a sync must not mark mail read"
        assert _titles(ws) == {"Note 0", "Note 1", "Note 2"}
        assert not ws.search("Body", user="eve@example.org", mode="keyword"), "ACL from config"
        SENT.clear()
        again = ws.sync().runs[0]
        assert (again.status, again.counts.new, again.counts.deleted) == ("succeeded", 0, 0)
        assert SENT["FETCH"] == 0, f"a no-op re-sync sent {SENT}"
        account.append("INBOX", message("Note 3", "Other text.\n"))
        account.expunge("INBOX", uids[1])
        SENT.clear()
        third = ws.sync().runs[0]
        assert (third.counts.new, third.counts.deleted) == (1, 1)
        assert SENT["FETCH"] == 2, f"one new message: one SIZE and one BODY.PEEK fetch, {SENT}"
        assert _titles(ws) == {"Note 0", "Note 2"}


def test_a_mailbox_that_cannot_be_listed_deletes_nothing(account: Account, tmp_path: Path) -> None:
    account.create("Archive")
    kept = account.append("INBOX", message("Inbox note", "Kept.\n"))
    account.append("Archive", message("Archived", "Old.\n"))
    with _workspace(account, tmp_path, '["INBOX", "Archive"]') as ws:
        assert ws.sync(index=False).runs[0].counts.new == 2
        account.expunge("INBOX", kept)
        with account.client() as imap:
            assert imap.delete("Archive")[0] == "OK"
        broken = ws.sync(index=False).runs[0]
        assert broken.status == "failed" and "Archive" in (broken.error or "")
        assert broken.counts.deleted == 0
        assert ws.manifest.count_documents("mail") == 2
