"""Unpack a zip-based file (DOCX and the like) with memory bounded whatever the input.

A zip bomb is a small file that inflates to gigabytes. Python's ``zipfile`` trusts the
sizes an archive declares and inflates a whole entry at once, so a reader handed the raw
archive can use as much memory as the bomb wants. Here every entry is checked before
anything is inflated (count, declared size, total, compression ratio, method), then
inflated in 64 KiB steps with a hard cap on the bytes that actually come out, since a
declared size can lie. What the parser library receives is a copy of the archive with
the checked entries stored uncompressed, so it can read no more than was checked.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from dataclasses import dataclass

from headwater.errors import ItemError

_STEP = 64 * 1024
_LOCAL_HEADER = struct.Struct("<4s5H3L2H")  # signature … name length, extra length
_SAFE_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate"}


@dataclass(frozen=True)
class ZipLimits:
    """What one archive may unpack to. The defaults fit every real office document."""

    max_unpacked_bytes: int = 256 * 1024 * 1024  # all entries together
    max_entries: int = 10_000
    max_ratio: int = 200  # unpacked / packed, for entries over ``ratio_floor_bytes``
    ratio_floor_bytes: int = 1024 * 1024


def checked_archive(content: bytes, *, kind: str, limits: ZipLimits | None = None) -> bytes:
    """``content`` (a zip archive) rebuilt with every entry stored, after the limits.

    Raises ``ItemError("too_large")`` for an archive over a limit (a zip bomb, or a file
    too large to read safely) and ``ItemError("unsupported_type")`` for an entry packed
    with a method other than stored or deflate; a corrupt archive raises what
    ``zipfile`` raises, which the caller turns into ``parse_error``.
    """
    limits = limits or ZipLimits()
    with zipfile.ZipFile(io.BytesIO(content)) as archive:
        entries = archive.infolist()
        check_declared(entries, kind, limits)
    rebuilt = io.BytesIO()
    with zipfile.ZipFile(rebuilt, "w", zipfile.ZIP_STORED) as copy:
        left = limits.max_unpacked_bytes
        for info in entries:
            if info.is_dir():
                continue
            data = inflate(content, info, left, kind)
            left -= len(data)
            copy.writestr(info.filename, data)
    return rebuilt.getvalue()


def check_declared(entries: list[zipfile.ZipInfo], kind: str, limits: ZipLimits) -> None:
    if len(entries) > limits.max_entries:
        raise too_large(kind, f"holds {len(entries):,} entries; the limit is "
                        f"{limits.max_entries:,}")  # fmt: skip
    total = 0
    for info in entries:
        if info.compress_type not in _SAFE_METHODS:
            raise ItemError(
                "unsupported_type",
                f"the {kind} entry {info.filename!r} is packed with zip method "
                f"{info.compress_type}; expected stored or deflate. Save the file again "
                "with an office application, or exclude it in the source's configuration.",
            )
        ratio = info.file_size / max(info.compress_size, 1)
        if info.file_size > limits.ratio_floor_bytes and ratio > limits.max_ratio:
            raise too_large(
                kind,
                f"entry {info.filename!r} inflates {info.compress_size:,} bytes to "
                f"{info.file_size:,} ({ratio:,.0f}:1); the limit is {limits.max_ratio}:1 "
                "(a zip bomb?)",
            )
        total += info.file_size
        if total > limits.max_unpacked_bytes:
            raise too_large(
                kind,
                f"unpacks to more than {limits.max_unpacked_bytes:,} bytes "
                f"({total:,} declared so far, at entry {info.filename!r})",
            )


def inflate(content: bytes, info: zipfile.ZipInfo, cap: int, kind: str) -> bytes:
    """The entry's bytes, inflated in steps from the archive's own bytes.

    The packed bytes are located through the local header (``zipfile`` itself would
    inflate an entry in one call and silently cut it at its declared size); output past
    the declared size or past ``cap`` is ``too_large``, a wrong CRC ``parse_error``.
    """
    header = content[info.header_offset : info.header_offset + _LOCAL_HEADER.size]
    if len(header) < _LOCAL_HEADER.size or header[:4] != b"PK\x03\x04":
        raise ItemError("parse_error", f"the {kind} entry {info.filename!r} has no local header")
    name_length, extra_length = _LOCAL_HEADER.unpack(header)[-2:]
    start = info.header_offset + _LOCAL_HEADER.size + name_length + extra_length
    packed = memoryview(content)[start : start + info.compress_size]
    limit = min(cap, info.file_size)
    parts: list[bytes] = []
    size = 0
    inflater = zlib.decompressobj(-15) if info.compress_type == zipfile.ZIP_DEFLATED else None
    for offset in range(0, len(packed), _STEP):
        pending = bytes(packed[offset : offset + _STEP])
        while pending:
            if inflater is None:
                step, pending = pending, b""
            else:
                try:
                    step = inflater.decompress(pending, _STEP)
                except zlib.error as exc:  # corrupt deflate data: this entry only
                    raise ItemError(
                        "parse_error",
                        f"the {kind} entry {info.filename!r} is corrupt ({exc}). Save the "
                        "file again.",
                    ) from exc
                pending = inflater.unconsumed_tail
            size += len(step)
            if size > limit:
                raise too_large(
                    kind,
                    f"entry {info.filename!r} inflates past {limit:,} bytes although it "
                    f"declares {info.file_size:,} (a zip bomb with a false size?)",
                )
            parts.append(step)
            if inflater is not None and inflater.eof:
                break
    data = b"".join(parts)
    if len(data) != info.file_size or zlib.crc32(data) != info.CRC:
        raise ItemError(
            "parse_error",
            f"the {kind} entry {info.filename!r} is corrupt: {len(data):,} bytes with a "
            f"wrong size or checksum (declared {info.file_size:,}). Save the file again.",
        )
    return data


def too_large(kind: str, detail: str) -> ItemError:
    """The permanent failure of a ``kind`` file past a limit; ``detail`` names it."""
    return ItemError(
        "too_large",
        f"the {kind} file {detail}. It is not read, so memory stays bounded; exclude it in "
        "the source's configuration, or split the document.",
    )
