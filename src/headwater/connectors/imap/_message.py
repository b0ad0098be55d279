"""MIME, both ways: a fetched message's text and attachments, and the attachment part
numbers of an IMAP ``BODYSTRUCTURE`` (so ``enumerate`` lists attachments without bodies).

Part numbers follow IMAP (RFC 3501 section 6.4.5): the children of a multipart are
``1``, ``2``…, nested ones ``2.1``; a single-part message is part ``1``. A part is an
attachment when its Content-Disposition is ``attachment``; an attached message
(``message/rfc822``) is one attachment and is not opened further.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from email import message_from_bytes, policy
from email.message import EmailMessage, Message
from email.utils import parsedate_to_datetime

from headwater.clock import as_utc


@dataclass(frozen=True)
class Attachment:
    """One attachment of a message: its MIME part, file name, media type and bytes."""

    part: str
    filename: str
    media_type: str
    data: bytes


@dataclass(frozen=True)
class ParsedMessage:
    """A message read for indexing: subject, body, sender, recipients, date, attachments."""

    subject: str
    body: bytes
    media_type: str  # text/plain or text/html, charset=utf-8
    sender: str
    recipients: str
    date: datetime | None
    attachments: list[Attachment]


def parse_message(raw: bytes) -> ParsedMessage:
    """The subject, the best text body (text/plain first), headers and attachments."""
    msg = message_from_bytes(raw, policy=policy.default)
    assert isinstance(msg, EmailMessage)
    plain: str | None = None
    html: str | None = None
    attachments: list[Attachment] = []
    for number, part in _numbered(msg, ""):
        if part.get_content_disposition() == "attachment":
            data = part.get_payload(decode=True)
            if not isinstance(data, bytes):
                data = part.as_bytes()
            name = part.get_filename() or f"part-{number}"
            media_type = part.get_content_type()
            if part.get_content_maintype() == "text" and part.get_content_charset():
                # the bytes are as attached: their declared charset decodes them
                media_type += f"; charset={part.get_content_charset()}"
            attachments.append(Attachment(number, name, media_type, data))
        elif part.get_content_type() == "text/plain" and plain is None:
            plain = _text_of(part)
        elif part.get_content_type() == "text/html" and html is None:
            html = _text_of(part)
    # The body is decoded here and sent on as UTF-8, so it says so: an HTML part keeps
    # its <meta charset=windows-1252> (Outlook writes one), which would otherwise win.
    if plain is not None:
        body, media_type = plain, "text/plain; charset=utf-8"
    elif html is not None:
        body, media_type = html, "text/html; charset=utf-8"
    else:
        body, media_type = "", "text/plain; charset=utf-8"
    return ParsedMessage(
        subject=str(msg.get("subject", "") or "").strip(),
        body=body.encode("utf-8"),
        media_type=media_type,
        sender=str(msg.get("from", "") or ""),
        recipients=str(msg.get("to", "") or ""),
        date=_date_of(str(msg.get("date", "") or "")),
        attachments=attachments,
    )


def _numbered(part: Message, prefix: str) -> list[tuple[str, Message]]:
    """Leaf parts with their IMAP part numbers."""
    if part.is_multipart() and part.get_content_type() != "message/rfc822":
        found: list[tuple[str, Message]] = []
        children = part.get_payload()
        assert isinstance(children, list)
        for index, child in enumerate(children, start=1):
            found.extend(_numbered(child, f"{prefix}{index}."))
        return found
    return [(prefix.rstrip(".") or "1", part)]


def _text_of(part: Message) -> str:
    assert isinstance(part, EmailMessage)
    try:
        text = str(part.get_content())
    except (LookupError, ValueError):  # an unknown charset: keep what decodes
        data = part.get_payload(decode=True)
        text = data.decode("utf-8", "replace") if isinstance(data, bytes) else ""
    return text.replace("\r\n", "\n")  # the wire's CRLF is not content


def _date_of(value: str) -> datetime | None:
    if not value:
        return None
    try:
        return as_utc(parsedate_to_datetime(value))
    except (TypeError, ValueError):
        return None


# -- BODYSTRUCTURE ---------------------------------------------------------------------

Token = str | bytes | None | list["Token"]
_TOKEN = re.compile(rb'\s*(?:(\()|(\))|"((?:[^"\\]|\\.)*)"|\{(\d+)\}\r\n|([^\s()"]+))', re.S)


def parse_sexp(text: bytes) -> list[Token]:
    """IMAP response data as nested lists; quoted strings and literals are bytes."""
    stack: list[list[Token]] = [[]]
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            if text[pos:].strip() == b"":
                break
            raise ValueError(f"unreadable IMAP data at {text[pos : pos + 40]!r}")
        pos = match.end()
        if match.group(1):
            stack.append([])
        elif match.group(2):
            done = stack.pop()
            stack[-1].append(done)
        elif match.group(3) is not None:
            stack[-1].append(re.sub(rb"\\(.)", rb"\1", match.group(3)))
        elif match.group(4) is not None:
            size = int(match.group(4))
            stack[-1].append(text[pos : pos + size])
            pos += size
        else:
            atom = match.group(5)
            stack[-1].append(None if atom.upper() == b"NIL" else atom.decode("ascii", "replace"))
    return stack[0]


def attachment_parts(structure: Token, prefix: str = "") -> list[str]:
    """The part numbers of the attachments in one parsed BODYSTRUCTURE."""
    if not isinstance(structure, list) or not structure:
        return []
    if isinstance(structure[0], list):  # multipart: children, then the subtype
        found: list[str] = []
        children: list[Token] = []
        for child in structure:
            if not isinstance(child, list):
                break
            children.append(child)
        for index, child in enumerate(children, start=1):
            found.extend(attachment_parts(child, f"{prefix}{index}."))
        return found
    number = prefix.rstrip(".") or "1"
    kind = _lower(structure[0])
    subtype = _lower(structure[1]) if len(structure) > 1 else ""
    disposition_at = 8  # basic: 7 fields, then md5, disposition
    if kind == "text":
        disposition_at = 9
    elif (kind, subtype) == ("message", "rfc822"):
        disposition_at = 11
    disposition = structure[disposition_at] if len(structure) > disposition_at else None
    if isinstance(disposition, list) and disposition and _lower(disposition[0]) == "attachment":
        return [number]
    return []


def _lower(token: Token) -> str:
    if isinstance(token, bytes):
        return token.decode("utf-8", "replace").lower()
    return token.lower() if isinstance(token, str) else ""
