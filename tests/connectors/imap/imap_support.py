"""A real Dovecot for the imap tests: config, accounts, and messages put in by APPEND."""

from __future__ import annotations

import imaplib
import uuid
from collections import Counter
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path

from pydantic import SecretStr

from headwater.connectors.base import SourceContext
from headwater.connectors.imap import ImapConnector, ImapOptions

PASSWORD = "s3cret-pass"


@dataclass
class Dovecot:
    port: int

    def account(self) -> Account:
        """A new, empty mail account: any name logs in with PASSWORD (a static passdb)."""
        return Account(self.port, f"u{uuid.uuid4().hex[:10]}")


@dataclass
class Account:
    port: int
    username: str

    def client(self) -> imaplib.IMAP4:
        imap = imaplib.IMAP4("127.0.0.1", self.port)
        imap.login(self.username, PASSWORD)
        return imap

    def create(self, mailbox: str) -> None:
        with self.client() as imap:
            assert imap.create(mailbox)[0] == "OK"

    def append(self, mailbox: str, message: EmailMessage) -> int:
        """APPEND one message; its UID."""
        with self.client() as imap:
            status, data = imap.append(mailbox, None, None, message.as_bytes())
            assert status == "OK", data
            return int(data[0].split(b"]")[0].split()[-1])

    def expunge(self, mailbox: str, uid: int) -> None:
        with self.client() as imap:
            imap.select(mailbox)
            imap.uid("STORE", str(uid), "+FLAGS", "(\\Deleted)")
            imap.expunge()

    def flags(self, mailbox: str, uid: int) -> bytes:
        with self.client() as imap:
            imap.select(mailbox, readonly=True)
            _, data = imap.uid("FETCH", str(uid), "(FLAGS)")
            return bytes(data[0]) if isinstance(data[0], bytes) else b""


def message(subject: str, body: str, *, html: str | None = None) -> EmailMessage:
    msg = EmailMessage()
    msg["Subject"] = subject
    msg["From"] = "Ann <ann@example.org>"
    msg["To"] = "bob@example.org"
    msg["Date"] = "Mon, 01 Dec 2025 10:00:00 +0000"
    if body:
        msg.set_content(body)
    if html is not None:
        if body:
            msg.add_alternative(html, subtype="html")
        else:
            msg.set_content(html, subtype="html")
    return msg


def make_connector(
    account: Account,
    tmp_path: Path,
    *,
    port: int | None = None,
    password: str = PASSWORD,
    commands: Counter[str] | None = None,
    **options: object,
) -> ImapConnector:
    opts = ImapOptions(
        host="127.0.0.1",
        port=port or account.port,
        ssl=False,
        username=account.username,
        password=SecretStr(password),
        **options,  # type: ignore[arg-type]
    )
    connector = ImapConnector(opts, SourceContext(source_id="mail", state_dir=tmp_path))
    if commands is not None:
        connector.commands = commands
    return connector
