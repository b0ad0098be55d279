"""The imap connector read directly against Dovecot: validate() messages, bodies and
metadata, attachments opt-in, and the UID checkpoint (a new UIDVALIDITY starts over)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from imap_support import Account, make_connector, message

from headwater.connectors.testing import FAR_FUTURE, collect, no_known
from headwater.errors import ConfigError, CredentialError, TransientError
from headwater.pipeline.parse import parse
from headwater.types import Checkpoint, Failure, Window
from ports import free_port

WINDOW = Window(None, FAR_FUTURE)


def test_validate_names_each_problem(account: Account, tmp_path: Path) -> None:
    with pytest.raises(CredentialError, match=r"AUTHENTICATIONFAILED.*fix `username`/`password`"):
        make_connector(account, tmp_path, password="wrong").validate()
    with pytest.raises(TransientError, match=r"127\.0\.0\.1:\d+: connection refused"):
        make_connector(account, tmp_path, port=free_port()).validate()
    with pytest.raises(ConfigError, match=r"'Nope' cannot be opened.*fix the name in `mailboxes`"):
        make_connector(account, tmp_path, mailboxes=["INBOX", "Nope"]).validate()


def test_message_fields_and_html_only_body(account: Account, tmp_path: Path) -> None:
    uid = account.append("INBOX", message("Plain", "The plain body.\n", html="<p>html</p>"))
    html_uid = account.append("INBOX", message("Html", "", html="<p>Only <b>HTML</b></p>"))
    docs = collect(make_connector(account, tmp_path).read(WINDOW, None, no_known)).documents
    plain, html = docs
    assert plain.object_id.startswith("INBOX/") and plain.object_id.endswith(f"/{uid}")
    assert plain.version == plain.object_id
    assert (plain.title, plain.media_type, plain.content) == (
        "Plain",
        "text/plain; charset=utf-8",
        b"The plain body.\n",
    )
    assert plain.metadata["from"] == "Ann <ann@example.org>"
    assert plain.metadata["to"] == "bob@example.org"
    assert plain.metadata["date"].startswith("2025-12-01T10:00:00")
    assert html.object_id.endswith(f"/{html_uid}")
    assert html.media_type == "text/html; charset=utf-8"
    assert html.content is not None and b"<b>HTML</b>" in html.content


def test_attachments_are_opt_in_and_enumerated(account: Account, tmp_path: Path) -> None:
    msg = message("With file", "See the attachment.\n")
    msg.add_attachment(b"quarterly numbers\n", maintype="text", subtype="plain", filename="q.txt")
    uid = account.append("INBOX", msg)
    off = make_connector(account, tmp_path)
    assert len(collect(off.read(WINDOW, None, no_known)).documents) == 1
    assert len(list(off.enumerate())) == 1
    on = make_connector(account, tmp_path, attachments=True)
    body, attachment = collect(on.read(WINDOW, None, no_known)).documents
    assert attachment.object_id == f"{body.object_id}/2" and body.object_id.endswith(f"/{uid}")
    assert (attachment.title, attachment.content) == ("q.txt", b"quarterly numbers\n")
    assert list(on.enumerate()) == [body.object_id, attachment.object_id]


def test_checkpoint_reads_above_last_uid_and_resets_on_new_uidvalidity(
    account: Account, tmp_path: Path
) -> None:
    for i in range(3):
        account.append("INBOX", message(f"N{i}", f"Body {i}.\n"))
    connector = make_connector(account, tmp_path)
    first = collect(connector.read(WINDOW, None, no_known))
    assert first.final is not None
    [(uidvalidity, last, _limit)] = json.loads(first.final.cursor).values()
    assert collect(connector.read(WINDOW, first.final, no_known)).documents == []
    stale = Checkpoint(json.dumps({"INBOX": [uidvalidity + 1, last]}))
    assert len(collect(connector.read(WINDOW, stale, no_known)).documents) == 3
    connector.commands.clear()
    known = {d.object_id: d.version for d in first.documents}
    again = collect(connector.read(WINDOW, stale, lambda o: known.get(o)))
    assert [d.content for d in again.documents] == [None, None, None]
    assert connector.commands["FETCH"] == 0, "known messages are immutable: no body read"


def test_a_mailbox_name_outside_ascii_is_sent_in_modified_utf7(
    account: Account, tmp_path: Path
) -> None:
    """`mailboxes = ["Entwürfe"]` as a user writes it: imaplib sends ASCII only, so the
    name goes out as IMAP's modified UTF-7 (`Entw&APw-rfe`); ids keep the name as written."""
    account.create("Entw&APw-rfe")
    uid = account.append("Entw&APw-rfe", message("Entwurf", "Grüße.\n"))
    connector = make_connector(account, tmp_path, mailboxes=["Entwürfe"])
    connector.validate()
    (doc,) = collect(connector.read(WINDOW, None, no_known)).documents
    assert doc.object_id.startswith("Entwürfe/") and doc.object_id.endswith(f"/{uid}")
    assert list(connector.enumerate()) == [doc.object_id]


def test_raising_max_message_bytes_reads_the_messages_it_refused(
    account: Account, tmp_path: Path
) -> None:
    """The too_large failure says to raise `max_message_bytes`; the UID cursor had moved
    past the message, so raising it read nothing. A raised limit now starts the mailbox
    over, and messages already held cost no FETCH."""
    small = account.append("INBOX", message("Small", "S.\n"))
    big = account.append("INBOX", message("Big", "B" * 3000 + "\n"))
    strict = make_connector(account, tmp_path, max_message_bytes=1000)
    first = collect(strict.read(WINDOW, None, no_known))
    assert [d.object_id.rsplit("/", 1)[1] for d in first.documents] == [str(small)]
    (failure,) = [i for i in first.items if isinstance(i, Failure)]
    assert failure.error_class == "too_large" and failure.object_id.endswith(f"/{big}")
    known = {d.object_id: d.version for d in first.documents}
    roomy = make_connector(account, tmp_path, max_message_bytes=10_000)
    again = collect(roomy.read(WINDOW, first.final, lambda o: known.get(o)))
    read_now = [d for d in again.documents if d.content is not None]
    assert [d.title for d in read_now] == ["Big"]
    assert collect(roomy.read(WINDOW, again.final, no_known)).documents == []  # settled


def test_an_html_mail_with_a_meta_charset_is_indexed_as_written(
    account: Account, tmp_path: Path
) -> None:
    """Outlook's HTML mail says <meta ... charset=windows-1252>; the body is decoded by its
    MIME charset and handed on as UTF-8, so that meta must not decide the decoding."""
    raw = (
        b"Subject: Menu\r\nFrom: a@b.c\r\nMIME-Version: 1.0\r\n"
        b"Content-Type: text/html; charset=windows-1252\r\n"
        b"Content-Transfer-Encoding: quoted-printable\r\n\r\n"
        b'<html><head><meta http-equiv=3D"Content-Type" content=3D"text/html; charset=3D'
        b'windows-1252"></head><body><p>Caf=E9 cr=E8me =96 d=E9j=E0 vu</p></body></html>\r\n'
    )
    with account.client() as imap:
        assert imap.append("INBOX", None, None, raw)[0] == "OK"
    (doc,) = collect(make_connector(account, tmp_path).read(WINDOW, None, no_known)).documents
    assert doc.content is not None
    text = parse(doc.content, name=doc.object_id, media_type=doc.media_type).text
    assert text == "Café crème – déjà vu"


def test_a_text_attachment_is_decoded_by_its_declared_charset(
    account: Account, tmp_path: Path
) -> None:
    msg = message("Report", "Attached.\n")
    russian = "Отчёт за квартал"
    msg.add_attachment(russian.encode("cp1251"), maintype="text", subtype="plain", filename="r.txt")
    msg.get_payload()[1].set_param("charset", "windows-1251")
    account.append("INBOX", msg)
    docs = collect(make_connector(account, tmp_path, attachments=True).read(WINDOW, None, no_known))
    attachment = docs.documents[1]
    assert attachment.media_type == "text/plain; charset=windows-1251"
    assert attachment.content is not None
    assert parse(attachment.content, name="r.txt", media_type=attachment.media_type).text == russian
