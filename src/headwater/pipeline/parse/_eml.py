"""EML parser (stdlib ``email``): the message's headers, body text and attachments.

The text opens with the headers a reader searches by (``From``, ``To``, ``Cc``,
``Subject``, ``Date``), then the body: the first ``text/plain`` part, else the first
``text/html`` part with its markup stripped by the HTML parser; then the attachments
(``_attachments``): listed by name, and each one of a format Headwater reads parsed
into a section of its own, within limits. An attached message (``message/rfc822``) is
one attachment: its parts are not taken for the outer body. The same headers are the
document's metadata (``from``, ``to``, ``cc``, ``subject``, ``date``) and the subject is
its title. A message with neither headers nor text is ``empty_document``.
"""

from __future__ import annotations

from collections.abc import Iterator
from email import message_from_bytes, policy
from email.errors import MessageError
from email.message import EmailMessage, Message

from headwater.pipeline.parse._attachments import Attachment, AttachmentReader, attachment_blocks
from headwater.pipeline.parse._common import Extracted, decode_text, tick

EML_VERSION = "eml-2"

_HEADERS = ("from", "to", "cc", "subject", "date")
PARSED_METADATA_KEYS = frozenset(_HEADERS)
"""Every metadata key a parser may set: a sync that skips by version hint (no parse)
keeps them from the manifest, so the document's signature stays the same."""


def parse_eml(
    content: bytes, charset: str | None, read_attachment: AttachmentReader | None = None
) -> Extracted:
    """An email's text and metadata, its subject the title; ``read_attachment`` parses an
    attachment (None lists them by name only)."""
    from headwater.pipeline.parse._html import parse_html

    msg = message_from_bytes(content, policy=policy.default)
    metadata: dict[str, str] = {}
    for key in _HEADERS:
        value = " ".join(str(msg.get(key, "") or "").split())
        if value:
            metadata[key] = value
    plain: str | None = None
    html: str | None = None
    attachments: list[Attachment] = []
    for part in _leaves(msg):
        tick()
        if part.get_content_type() == "message/rfc822":
            attachments.append(_attached_message(part))
        elif part.get_content_disposition() == "attachment" or (
            part.get_filename() and part.get_content_maintype() != "text"
        ):
            attachments.append(_attachment(part))
        elif part.get_content_type() == "text/plain" and plain is None:
            plain = _text_of(part)
        elif part.get_content_type() == "text/html" and html is None:
            html = _text_of(part)
    if plain is not None and plain.strip():
        body = plain
    elif html is not None:
        body = parse_html(html.encode("utf-8"), "utf-8")[0]
    else:
        body = ""
    blocks = ["\n".join(f"{key.capitalize()}: {metadata[key]}" for key in metadata)]
    blocks.append(body)
    blocks += attachment_blocks(attachments, read_attachment)
    return Extracted(
        text="\n\n".join(b for b in blocks if b.strip()),
        title=metadata.get("subject"),
        metadata=metadata,
    )


def _leaves(part: Message) -> Iterator[Message]:
    """The message's non-multipart parts in order; an attached message is one leaf."""
    if part.get_content_type() != "message/rfc822" and part.is_multipart():
        payload = part.get_payload()
        for child in payload if isinstance(payload, list) else []:
            if isinstance(child, Message):
                yield from _leaves(child)
    else:
        yield part


def _attachment(part: Message) -> Attachment:
    payload = part.get_payload(decode=True)
    data = payload if isinstance(payload, bytes) else b""
    media_type = part.get_content_type()
    if part.get_content_charset():
        media_type += f"; charset={part.get_content_charset()}"
    return Attachment(part.get_filename() or part.get_content_type(), data, media_type)


def _attached_message(part: Message) -> Attachment:
    payload = part.get_payload()
    inner = payload[0] if isinstance(payload, list) and payload else None
    if not isinstance(inner, Message):
        return Attachment(part.get_filename() or "message.eml", b"", "message/rfc822")
    try:
        data = inner.as_bytes()
    except (ValueError, LookupError, UnicodeError, MessageError):  # a header it cannot write
        data = b""  # then it is listed only
    subject = " ".join(str(inner.get("subject", "") or "").split())
    name = part.get_filename() or (f"{subject}.eml" if subject else "message.eml")
    return Attachment(name, data, "message/rfc822")


def _text_of(part: Message) -> str:
    if isinstance(part, EmailMessage):
        try:
            content = part.get_content()
        except (LookupError, UnicodeError, ValueError, AssertionError):
            content = None
        if isinstance(content, str):
            return content
    payload = part.get_payload(decode=True)
    if isinstance(payload, bytes):
        return decode_text(payload, part.get_content_charset())
    return str(part.get_payload())
