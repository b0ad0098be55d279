"""Round-trip cases for the message and file-sharing connectors: slack, teams and box on
their fakes (``tests/fakes/<name>``, from the vendors' documentation), gmail on its fake
and imap on a real Dovecot. Each fills its source in-process (Dovecot through one IMAP
session) with the N items of ``roundtrip_run``.

slack, teams and box take the shared round trip (5 % deleted, edited and, for box whose
files carry their own collaborations, re-permissioned). A mail message never changes (its
id is its version, for gmail and imap alike), so ``MailCase``s take ``mail_round_trip``:
5 % deleted and 5 % new messages arrive in place of the edits.
"""

from __future__ import annotations

import imaplib
from dataclasses import dataclass, field
from email.message import EmailMessage
from typing import Any, Protocol

import httpx
from saas_cases import NEW_READER, OLD_READER, STAFF, N, body_of, text_of

from fakes.box import FakeBox
from fakes.gmail import FakeGmail
from fakes.slack import FakeSlack
from fakes.teams import FakeTeams


@dataclass
class SlackCase:
    """N threads (a root and one reply each) in one private channel whose one member is
    the reader (a thread's ACL is its channel's); an edit sets the root's ``edited``, a
    deleted root leaves a ``tombstone`` parent (it had a reply)."""

    slack: FakeSlack
    per_object_acl: bool = False
    reader: dict[str, Any] = field(default_factory=lambda: {"user": OLD_READER})
    roots: dict[int, str] = field(default_factory=dict)

    def source(self) -> str:
        return (
            f'[[source]]\nid = "src"\ntype = "slack"\nbase_url = "{self.slack.url}/api"\n'
            'token = "xoxb-test-token"\nchannels = ["C1"]\npage_size = 1000\n'
            "retry_initial_wait = 0.0\nretry_max_wait = 0.0\n"
        )

    def object_id(self, i: int) -> str:
        return f"C1/thread/{self.roots[i]}"

    def load(self) -> None:
        self.slack.user("U1", OLD_READER)
        self.slack.user("U2", "bob@example.com")
        self.slack.channel("C1", "items", ["U1"], private=True)
        for i in range(N):
            self.roots[i] = self.slack.post("C1", "U2", body_of(i))
            self.slack.reply("C1", self.roots[i], "U1", "Noted.")

    def mutate(self, deleted: list[int], edited: list[int], regranted: list[int]) -> None:
        for i in deleted:
            self.slack.remove("C1", self.roots[i])
        for i in edited:
            self.slack.edit("C1", self.roots[i], body_of(i, True))


@dataclass
class TeamsCase:
    """N root messages in a standard channel of a team whose member is the reader (a
    thread's ACL is its team's); edits and deletes arrive through the channel's delta."""

    graph: FakeTeams
    per_object_acl: bool = False
    reader: dict[str, Any] = field(default_factory=lambda: {"user": OLD_READER})
    ids: dict[int, str] = field(default_factory=dict)

    def source(self) -> str:
        return (
            f'[[source]]\nid = "src"\ntype = "teams"\nbase_url = "{self.graph.url}/v1.0"\n'
            f'token = "{self.graph.token}"\nteams = ["t1"]\npage_size = 50\n'
            "retry_initial_wait = 0.0\nretry_max_wait = 0.0\n"
        )

    def object_id(self, i: int) -> str:
        return f"t1/c1/{self.ids[i]}"

    def load(self) -> None:
        self.graph.team("t1", "Items", [OLD_READER])
        self.graph.channel("t1", "c1", "General", "standard", [])
        for i in range(N):
            self.ids[i] = self.graph.post("t1", "c1", "bob", f"<p>{body_of(i)}</p>")

    def mutate(self, deleted: list[int], edited: list[int], regranted: list[int]) -> None:
        for i in deleted:
            self.graph.delete("t1", "c1", self.ids[i])
        for i in edited:
            self.graph.edit("t1", "c1", self.ids[i], f"<p>{body_of(i, True)}</p>")


@dataclass
class BoxCase:
    """N files in one folder, each shared with the reader by its own collaboration; the
    ACL step removes that collaboration (``DELETE /2.0/collaborations/{id}``, over HTTP)
    and shares the file with ``NEW_READER``. Uploads, trashes and collaboration changes
    arrive through the changes event stream."""

    box: FakeBox
    per_object_acl: bool = True
    reader: dict[str, Any] = field(default_factory=lambda: {"user": OLD_READER})
    ids: dict[int, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.folder = self.box.folder("Items").id  # the source's `folder_id`

    def source(self) -> str:
        return (
            f'[[source]]\nid = "src"\ntype = "box"\napi_url = "{self.box.url}"\n'
            f'token = "{self.box.token}"\nfolder_id = "{self.folder}"\npage_size = 1000\n'
            "retry_initial_wait = 0.0\nretry_max_wait = 0.0\n"
        )

    def object_id(self, i: int) -> str:
        return self.ids[i]

    def load(self) -> None:
        for i in range(N):
            self.ids[i] = self.box.put(f"Items/item-{i:04d}.md", text_of(i).encode()).id
            self.box.collaborate(self.ids[i], OLD_READER)

    def mutate(self, deleted: list[int], edited: list[int], regranted: list[int]) -> None:
        for i in deleted:
            self.box.trash(self.ids[i])
        for i in edited:
            self.box.put(f"Items/item-{i:04d}.md", text_of(i, True).encode())
        auth = {"authorization": f"Bearer {self.box.token}"}
        with httpx.Client(base_url=f"{self.box.url}/2.0", headers=auth) as client:
            for i in regranted:
                (grant,) = self.box.nodes[self.ids[i]].collabs
                assert client.delete(f"/collaborations/{grant['id']}").status_code == 204
                self.box.collaborate(self.ids[i], NEW_READER)


class MailCase(Protocol):
    """A mail source: messages are added and deleted, never edited."""

    per_object_acl: bool
    reader: dict[str, Any]

    def source(self) -> str: ...

    def object_id(self, i: int) -> str: ...

    def load(self) -> None: ...

    def mutate(self, deleted: list[int], added: list[int]) -> None: ...


def raw_message(i: int) -> bytes:
    """Item ``i`` as an RFC 822 message: its subject is the title, its body the text."""
    msg = EmailMessage()
    msg["Subject"], msg["From"], msg["To"] = f"Item {i}", "bob@example.org", OLD_READER
    msg["Date"] = "Mon, 01 Dec 2025 10:00:00 +0000"
    msg.set_content(body_of(i))
    return msg.as_bytes()


@dataclass
class GmailCase:
    """One mailbox (the reader's: its owner reads it) of N messages in the inbox;
    deletes and new messages arrive through ``users.history.list``."""

    gm: FakeGmail
    per_object_acl: bool = False
    reader: dict[str, Any] = field(default_factory=lambda: {"user": OLD_READER})

    def source(self) -> str:
        key = self.gm.key_json.replace("\\", "\\\\").replace('"', '\\"')
        return (
            f'[[source]]\nid = "src"\ntype = "gmail"\napi_url = "{self.gm.url}"\n'
            f'service_account_json = "{key}"\nusers = ["{OLD_READER}"]\npage_size = 500\n'
            "retry_initial_wait = 0.0\nretry_max_wait = 0.0\n"
        )

    def object_id(self, i: int) -> str:
        return f"{OLD_READER}/m{i:04d}"

    def load(self) -> None:
        for i in range(N):
            self.gm.add(OLD_READER, f"m{i:04d}", raw_message(i), {"INBOX"})

    def mutate(self, deleted: list[int], added: list[int]) -> None:
        for i in deleted:
            self.gm.remove(OLD_READER, f"m{i:04d}")
        for i in added:
            self.gm.add(OLD_READER, f"m{i:04d}", raw_message(i), {"INBOX"})


@dataclass
class ImapCase:
    """A fresh account's INBOX on the real Dovecot (``tests/connectors/imap``), filled by
    APPEND in one session; deletes are ``\\Deleted`` + EXPUNGE (found by ``enumerate()``),
    new messages come after the last UID read. The ACL is the source's ``access``."""

    port: int
    username: str
    password: str
    per_object_acl: bool = False
    reader: dict[str, Any] = field(default_factory=lambda: {"groups": [STAFF]})
    uids: dict[int, int] = field(default_factory=dict)
    validity: str = ""

    def source(self) -> str:
        return (
            f'[[source]]\nid = "src"\ntype = "imap"\nhost = "127.0.0.1"\nport = {self.port}\n'
            f'ssl = false\nusername = "{self.username}"\npassword = "{self.password}"\n'
            f'batch_size = 500\naccess = {{ groups = ["{STAFF}"] }}\n'
        )

    def object_id(self, i: int) -> str:
        return f"INBOX/{self.validity}/{self.uids[i]}"

    def append(self, imap: imaplib.IMAP4, items: list[int]) -> None:
        for i in items:
            status, data = imap.append("INBOX", None, None, raw_message(i))
            assert status == "OK", data
            code = data[0].decode().split("[", 1)[1].split("]", 1)[0]  # APPENDUID v uid
            _, self.validity, uid = code.split()
            self.uids[i] = int(uid)

    def load(self) -> None:
        with imaplib.IMAP4("127.0.0.1", self.port) as imap:
            imap.login(self.username, self.password)
            self.append(imap, list(range(N)))

    def mutate(self, deleted: list[int], added: list[int]) -> None:
        with imaplib.IMAP4("127.0.0.1", self.port) as imap:
            imap.login(self.username, self.password)
            imap.select("INBOX")
            doomed = ",".join(str(self.uids[i]) for i in deleted)
            assert imap.uid("STORE", doomed, "+FLAGS", "(\\Deleted)")[0] == "OK"
            assert imap.expunge()[0] == "OK"
            self.append(imap, added)
