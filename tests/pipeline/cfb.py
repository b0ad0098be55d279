"""A small writer of Compound File Binary files ([MS-CFB] version 3), for test files.

No maintained Python library writes CFB (olefile only edits streams in place), and an
Outlook ``.msg`` is a CFB file of storages and streams ([MS-OXMSG]). This writer lays one
out as the specification says: a 512-byte header, the FAT, a directory of 128-byte
entries whose siblings form a (degenerate, all-black) tree, streams under 4,096 bytes in
the mini stream with its MiniFAT, larger ones in regular 512-byte sectors. olefile
reads what it writes; ``make_msg`` builds a message as Outlook stores one.
"""

from __future__ import annotations

import datetime as dt
import struct
from dataclasses import dataclass, field
from itertools import pairwise

_SECTOR = 512
_MINI = 64
_CUTOFF = 4096
_FREE, _END, _FATSECT, _NOSTREAM = 0xFFFFFFFF, 0xFFFFFFFE, 0xFFFFFFFD, 0xFFFFFFFF

Tree = dict[str, "bytes | Tree"]


@dataclass
class _Entry:
    name: str
    kind: int  # 1 storage, 2 stream, 5 root
    data: bytes = b""
    children: list[int] = field(default_factory=list)
    start: int = _END
    size: int = 0


def write_cfb(tree: Tree) -> bytes:
    """The bytes of a CFB file holding ``tree`` (a name → bytes or sub-tree mapping)."""
    entries = [_Entry("Root Entry", 5)]

    def add(parent: int, items: Tree) -> None:
        for name, value in items.items():
            entries.append(_Entry(name, 2 if isinstance(value, bytes) else 1))
            index = len(entries) - 1
            entries[parent].children.append(index)
            if isinstance(value, bytes):
                entries[index].data = value
            else:
                add(index, value)

    add(0, tree)
    mini = bytearray()
    mini_fat: list[int] = []
    big: list[_Entry] = []
    for entry in entries:
        if entry.kind != 2:
            continue
        entry.size = len(entry.data)
        if entry.size >= _CUTOFF:
            big.append(entry)
        elif entry.size:
            first = len(mini) // _MINI
            count = -(-entry.size // _MINI)
            mini += entry.data.ljust(count * _MINI, b"\x00")
            mini_fat += [*range(first + 1, first + count), _END]
            entry.start = first
    fat: list[int] = []
    body = bytearray()

    def place(data: bytes) -> int:
        if not data:
            return _END
        first = len(fat)
        count = -(-len(data) // _SECTOR)
        fat.extend([*range(first + 1, first + count), _END])
        body.extend(data.ljust(count * _SECTOR, b"\x00"))
        return first

    for entry in big:
        entry.start = place(entry.data)
    entries[0].start, entries[0].size = place(bytes(mini)), len(mini)
    mini_fat_bytes = struct.pack(f"<{len(mini_fat)}I", *mini_fat) if mini_fat else b""
    mini_fat_bytes = mini_fat_bytes.ljust(-(-len(mini_fat_bytes) // _SECTOR) * _SECTOR, b"\xff")
    mini_fat_start = place(mini_fat_bytes)
    directory_start = place(b"".join(_directory_entry(entries, i) for i in range(len(entries))))
    fat_sectors = 1
    while fat_sectors * (_SECTOR // 4) < len(fat) + fat_sectors:
        fat_sectors += 1
    fat_start = len(fat)
    fat.extend([_FATSECT] * fat_sectors)
    fat.extend([_FREE] * (fat_sectors * (_SECTOR // 4) - len(fat)))
    body.extend(struct.pack(f"<{len(fat)}I", *fat))
    difat = list(range(fat_start, fat_start + fat_sectors)) + [_FREE] * (109 - fat_sectors)
    header = struct.pack(
        "<8s16sHHHHH6sIIIIIIIII",
        b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", bytes(16), 0x3E, 3, 0xFFFE, 9, 6, bytes(6),
        0, fat_sectors, directory_start, 0, _CUTOFF,
        mini_fat_start, len(mini_fat_bytes) // _SECTOR, _END, 0,
    ) + struct.pack("<109I", *difat)  # fmt: skip
    return header + bytes(body)


def _directory_entry(entries: list[_Entry], index: int) -> bytes:
    entry = entries[index]
    name = entry.name.encode("utf-16-le") + b"\x00\x00"
    siblings = {c: n for parent in entries for c, n in pairwise(parent.children)}
    child = entry.children[0] if entry.children else _NOSTREAM
    return struct.pack(
        "<64sHBBIII16sIQQIQ",
        name, len(name), entry.kind, 1, _NOSTREAM, siblings.get(index, _NOSTREAM), child,
        bytes(16), 0, 0, 0, entry.start if entry.kind != 1 else 0, entry.size,
    )  # fmt: skip


def _unicode(text: str) -> bytes:
    return text.encode("utf-16-le")


def _properties(header: bytes, sent: dt.datetime | None) -> bytes:
    """A ``__properties_version1.0`` stream: its header, then ``PR_CLIENT_SUBMIT_TIME``."""
    if sent is None:
        return header
    ticks = int((sent - dt.datetime(1601, 1, 1, tzinfo=dt.UTC)).total_seconds() * 10_000_000)
    return header + struct.pack("<HHIQ", 0x0040, 0x0039, 0x2, ticks)


def make_msg(
    *,
    subject: str,
    body: str,
    sender: tuple[str, str],
    to: str,
    cc: str = "",
    sent: dt.datetime | None = None,
    attachments: tuple[tuple[str, bytes], ...] = (),
) -> bytes:
    """An Outlook message ([MS-OXMSG]): properties as ``__substg1.0_<id><type>``
    streams (``001F`` UTF-16 text, ``0102`` binary), attachments as storages."""
    tree: Tree = {
        "__nameid_version1.0": {"__substg1.0_00020102": b"", "__substg1.0_00030102": b""},
        "__substg1.0_001A001F": _unicode("IPM.Note"),
        "__substg1.0_0037001F": _unicode(subject),
        "__substg1.0_0C1A001F": _unicode(sender[0]),
        "__substg1.0_0C1F001F": _unicode(sender[1]),
        "__substg1.0_0E04001F": _unicode(to),
        "__substg1.0_1000001F": _unicode(body),
        "__properties_version1.0": _properties(
            struct.pack("<8sIIII8s", bytes(8), 1, len(attachments), 0, len(attachments), bytes(8)),
            sent,
        ),
    }
    if cc:
        tree["__substg1.0_0E03001F"] = _unicode(cc)
    for number, (name, data) in enumerate(attachments):
        tree[f"__attach_version1.0_#{number:08X}"] = {
            "__substg1.0_3707001F": _unicode(name),
            "__substg1.0_3001001F": _unicode(name),
            "__substg1.0_37010102": data,
            "__properties_version1.0": bytes(8),
        }
    return write_cfb(tree)


def sample_msg(**extra: object) -> bytes:
    """Alice's budget message, with ``extra`` fields of ``make_msg`` replaced."""
    fields: dict[str, object] = {
        "subject": "Budget for Q3",
        "body": "The travel budget is approved.\r\nSee the attached sheet.",
        "sender": ("Alice Example", "alice@example.org"),
        "to": "Bob Example",
        "cc": "Carol Example",
        "sent": dt.datetime(2024, 10, 1, 10, 0, tzinfo=dt.UTC),
    }
    fields.update(extra)
    return make_msg(**fields)  # type: ignore[arg-type]
