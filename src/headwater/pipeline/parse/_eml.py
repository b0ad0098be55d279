"""EML parser (stdlib ``email``): the message's headers, body text and attachment names.

The text opens with the headers a reader searches by (``From``, ``To``, ``Cc``,
``Subject``, ``Date``), then the body: the first ``text/plain`` part, else the first
``text/html`` part with its markup stripped by the HTML parser; then ``Attachments:``
with each attachment's file name (attachments are not opened here). The same headers
are the document's metadata (``from``, ``to``, ``cc``, ``subject``, ``date``) and the
subject is its title. A message with neither headers nor text is ``empty_document``.
"""

from __future__ import annotations

from email import message_from_bytes, policy
from email.message import EmailMessage, Message

from headwater.pipeline.parse._common import Extracted, decode_text

EML_VERSION = "eml-1"

_HEADERS = ("from", "to", "cc", "subject", "date")
PARSED_METADATA_KEYS = frozenset(_HEADERS)
"""Every metadata key a parser may set: a sync that skips by version hint (no parse)
keeps them from the manifest, so the document's signature stays the same."""


def parse_eml(content: bytes, charset: str | None) -> Extracted:
    """An email's text and metadata; its subject is the title."""
    from headwater.pipeline.parse._html import parse_html

    msg = message_from_bytes(content, policy=policy.default)
    metadata: dict[str, str] = {}
    for key in _HEADERS:
        value = " ".join(str(msg.get(key, "") or "").split())
        if value:
            metadata[key] = value
    plain: str | None = None
    html: str | None = None
    attachments: list[str] = []
    for part in msg.walk():
        if part.is_multipart():
            continue
        if part.get_content_disposition() == "attachment" or (
            part.get_filename() and part.get_content_maintype() != "text"
        ):
            attachments.append(part.get_filename() or part.get_content_type())
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
    if attachments:
        blocks.append("Attachments: " + ", ".join(attachments))
    return Extracted(
        text="\n\n".join(b for b in blocks if b.strip()),
        title=metadata.get("subject"),
        metadata=metadata,
    )


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
