"""MSG parser (olefile): an Outlook message's headers, body text and attachments.

An ``.msg`` file is a Compound File ([MS-CFB]) whose streams hold the message's MAPI
properties ([MS-OXMSG]): ``__substg1.0_<id><type>`` with type ``001F`` (UTF-16 text),
``001E`` (8-bit text) or ``0102`` (binary). Read: subject (``0037``), sender name and
address (``0C1A``, ``0C1F`` or ``5D01``), display To and Cc (``0E04``, ``0E03``), the
submit time (``0039`` in ``__properties_version1.0``), the plain body (``1000``), else
the HTML body (``1013``) through the HTML parser; a body kept only as compressed RTF is
not read. The text and metadata are those of the EML parser (same keys, same header
block), and attachments (``__attach_version1.0_#N`` storages) go through
``_attachments`` like an e-mail's; an embedded message is listed, not opened.
extract-msg was not used: it is GPL-3.0 (Headwater is Apache-2.0) and pulls in several
more packages (RTF de-encapsulation, time zones, HTML); olefile (BSD, no dependencies)
is what it reads with.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import io
import struct
from typing import Any, Final

from headwater.errors import ItemError
from headwater.pipeline.parse._attachments import Attachment, AttachmentReader, attachment_blocks
from headwater.pipeline.parse._common import Extracted, decode_text, tick
from headwater.pipeline.parse._sniff import CFB_MAGIC

MSG_VERSION = "msg-1+olefile"

MAX_STREAM_BYTES: Final = 64 * 1024 * 1024
_ATTACH: Final = "__attach_version1.0_#"
_PROPERTIES: Final = "__properties_version1.0"
_FILETIME_EPOCH: Final = dt.datetime(1601, 1, 1, tzinfo=dt.UTC)


def parse_msg(
    content: bytes, charset: str | None, read_attachment: AttachmentReader | None = None
) -> Extracted:
    """``read_attachment`` parses an attachment; None lists them by name only."""
    import olefile

    if not content.startswith(CFB_MAGIC):
        raise ItemError("parse_error", "the MSG file is not a Compound File (no d0cf11e0)")
    # Bytes, never a str or a short bytes object: olefile takes those for a file path.
    with olefile.OleFileIO(io.BytesIO(content), raise_defects=olefile.DEFECT_INCORRECT) as ole:
        if not ole.exists("__substg1.0_0037001F") and not ole.exists(_PROPERTIES):
            raise ItemError("parse_error", "the Compound File holds no Outlook message")
        metadata: dict[str, str] = {}
        name, address = _text(ole, [], "0C1A"), _text(ole, [], "0C1F") or _text(ole, [], "5D01")
        sender = f"{name} <{address}>" if name and address and name != address else name
        values = {
            "from": sender or address,
            "to": _text(ole, [], "0E04"),
            "cc": _text(ole, [], "0E03"),
            "subject": _text(ole, [], "0037"),
            "date": _sent(ole),
        }
        for key, value in values.items():
            if value := " ".join(value.split()):
                metadata[key] = value
        body = _text(ole, [], "1000")
        if not body.strip():
            html = _stream(ole, ["__substg1.0_10130102"]) or _text(ole, [], "1013").encode()
            if html:
                from headwater.pipeline.parse._html import parse_html

                body = parse_html(html, None)[0]
        attachments = _attachments(ole)
    blocks = ["\n".join(f"{key.capitalize()}: {metadata[key]}" for key in metadata), body]
    blocks += attachment_blocks(attachments, read_attachment)
    return Extracted(
        text="\n\n".join(b for b in blocks if b.strip()),
        title=metadata.get("subject"),
        metadata=metadata,
    )


def _stream(ole: Any, path: list[str]) -> bytes:
    if not ole.exists("/".join(path)) or ole.get_type(path) != 2:  # STGTY_STREAM
        return b""
    if ole.get_size(path) > MAX_STREAM_BYTES:
        raise ItemError(
            "too_large",
            f"the MSG stream {'/'.join(path)!r} is {ole.get_size(path):,} bytes; the limit is "
            f"{MAX_STREAM_BYTES:,}. Exclude it in the source's configuration.",
        )
    tick()
    return bytes(ole.openstream(path).read())


def _text(ole: Any, storage: list[str], prop: str) -> str:
    """A string property: UTF-16 (``001F``) or 8-bit (``001E``, detected)."""
    wide = _stream(ole, [*storage, f"__substg1.0_{prop}001F"])
    if wide:
        return wide.decode("utf-16-le", errors="replace").rstrip("\x00")
    narrow = _stream(ole, [*storage, f"__substg1.0_{prop}001E"])
    return decode_text(narrow.rstrip(b"\x00"), None) if narrow else ""


def _sent(ole: Any) -> str:
    """The submit time (``0039``), else the delivery time (``0E06``), as an RFC 5322 date."""
    raw = _stream(ole, [_PROPERTIES])
    found: dict[int, int] = {}
    for offset in range(32, len(raw) - 15, 16):  # a 32-byte header on the top level
        kind, prop, _, value = struct.unpack_from("<HHIQ", raw, offset)
        if kind == 0x0040 and prop in (0x0039, 0x0E06):  # PT_SYSTIME
            found[prop] = value
    ticks = found.get(0x0039) or found.get(0x0E06)
    if not ticks:
        return ""
    try:
        sent = _FILETIME_EPOCH + dt.timedelta(microseconds=ticks // 10)
    except OverflowError:
        return ""
    return email.utils.format_datetime(sent.replace(microsecond=0))


def _attachments(ole: Any) -> list[Attachment]:
    storages = sorted(
        {
            entry[0]
            for entry in ole.listdir(streams=True, storages=True)
            if entry[0].startswith(_ATTACH)
        }
    )
    found: list[Attachment] = []
    for storage in storages:
        tick()
        name = (
            _text(ole, [storage], "3707")
            or _text(ole, [storage], "3704")
            or _text(ole, [storage], "3001")
            or storage
        )
        data = _stream(ole, [storage, "__substg1.0_37010102"])  # an embedded message: none
        media_type = _text(ole, [storage], "370E") or None
        found.append(Attachment(" ".join(name.split()), data, media_type))
    return found
