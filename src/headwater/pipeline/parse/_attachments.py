"""A message's attachments as sections of its own document, parsed by their own formats.

Each attachment is listed by name (``Attachments: a.pdf, b.xlsx``); then each one a
parser reads becomes a section ``# Attachment: <file name>`` with its text, in message
order. Limits: at most ``MAX_ATTACHMENTS`` attachments and ``MAX_ATTACHMENT_BYTES``
(decoded) in all are parsed, the rest are listed with a note. One level: a message
attached to a message is parsed with its own attachments listed, not parsed. An
attachment of a format no parser reads, or with no text, is listed only; one that
fails to parse gets a note with the failure (``Not read (parse_error): …``) and never
fails the message. The message's time budget covers its attachments.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from headwater.errors import ItemError
from headwater.pipeline.parse._common import tick

MAX_ATTACHMENTS: Final = 20
MAX_ATTACHMENT_BYTES: Final = 32 * 1024 * 1024

AttachmentReader = Callable[[str, bytes, str | None], str]
"""``(file name, bytes, media type) -> text`` of one attachment; raises ``ItemError``."""

_LISTED_ONLY: Final = frozenset({"unsupported_type", "empty_document"})


@dataclass(frozen=True)
class Attachment:
    """One attached file: its name, decoded bytes and declared media type."""

    name: str
    data: bytes
    media_type: str | None


def attachment_blocks(
    attachments: Sequence[Attachment], read: AttachmentReader | None
) -> list[str]:
    """The ``Attachments:`` line, then a section per attachment ``read`` turns into text
    (none when ``read`` is None: an attached message lists its own)."""
    if not attachments:
        return []
    blocks = ["Attachments: " + ", ".join(a.name for a in attachments)]
    if read is None:
        return blocks
    parsed = 0
    used = 0
    for attachment in attachments:
        tick()
        heading = f"# Attachment: {attachment.name}"
        if parsed >= MAX_ATTACHMENTS or used + len(attachment.data) > MAX_ATTACHMENT_BYTES:
            blocks.append(
                f"{heading}\n\nNot read: past the limit of {MAX_ATTACHMENTS} attachments "
                f"or {MAX_ATTACHMENT_BYTES:,} bytes of attachments a message."
            )
            continue
        parsed += 1
        used += len(attachment.data)
        try:
            text = read(attachment.name, attachment.data, attachment.media_type)
        except ItemError as exc:
            if exc.error_class not in _LISTED_ONLY:
                blocks.append(f"{heading}\n\nNot read ({exc.error_class}): {exc}")
            continue
        blocks.append(f"{heading}\n\n{text}")
    tick()  # an attachment that used up the message's budget fails the message
    return blocks
