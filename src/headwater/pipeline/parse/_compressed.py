"""Compressed single files (``.gz``, ``.bz2``, ``.xz``): unpacked under the zip limits.

``README.gz`` is ``README`` compressed: the bytes are decompressed and the inner name
(the name without its compression suffix) decides the format, so ``changelog.Debian.gz``
is read as text and ``guide.html.gz`` as HTML. Decompression is streamed in 64 KiB steps
with a hard cap on the bytes that come out, so a gzip bomb (a few kB that inflate to
gigabytes) is ``too_large`` with memory bounded, whatever the stream declares. The caps
are those of ``_zip.ZipLimits``: 256 MiB out in all, and 200:1 once past 1 MiB. A
corrupt or truncated stream is ``parse_error``. One level only: a compressed file inside
a compressed file is refused.
"""

from __future__ import annotations

import bz2
import lzma
import zlib
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import Final, Protocol

from headwater.errors import ItemError
from headwater.pipeline.parse._zip import ZipLimits

COMPRESSED_VERSION = "compressed-1"

_STEP = 64 * 1024

COMPRESSION_SUFFIXES: Final[dict[str, str]] = {".gz": "gzip", ".bz2": "bzip2", ".xz": "xz"}
COMPRESSION_MEDIA_TYPES: Final[dict[str, str]] = {
    "application/gzip": "gzip",
    "application/x-gzip": "gzip",
    "application/x-bzip2": "bzip2",
    "application/x-xz": "xz",
}


class _Decompressor(Protocol):
    @property
    def eof(self) -> bool: ...

    @property
    def unused_data(self) -> bytes: ...

    def decompress(self, data: bytes, max_length: int = ..., /) -> bytes: ...


class _Zlib:
    """``zlib.decompressobj`` with the ``needs_input``-free interface of bz2 and lzma."""

    def __init__(self) -> None:
        self._inner = zlib.decompressobj(zlib.MAX_WBITS | 16)  # gzip header and trailer
        self._tail = b""

    @property
    def eof(self) -> bool:
        return self._inner.eof

    @property
    def unused_data(self) -> bytes:
        return self._inner.unused_data

    def decompress(self, data: bytes, max_length: int = 0, /) -> bytes:
        out = self._inner.decompress(self._tail + data, max_length)
        self._tail = self._inner.unconsumed_tail
        return out

    def pending(self) -> bool:
        return bool(self._tail)


_FACTORIES: Final[dict[str, Callable[[], _Decompressor]]] = {
    "gzip": _Zlib,
    "bzip2": bz2.BZ2Decompressor,
    "xz": lzma.LZMADecompressor,
}


_MAGIC: Final = {"gzip": b"\x1f\x8b", "bzip2": b"BZh", "xz": b"\xfd7zXZ\x00"}


def packed_as_named(name: str, content: bytes) -> bool:
    """Whether ``content`` starts as its name's compression suffix says it does: then
    the file is compressed whatever media type came with it (``mimetypes`` gives
    ``notes.txt.gz`` the type ``text/plain``, the type of what is inside)."""
    method = COMPRESSION_SUFFIXES.get(PurePosixPath(name).suffix.lower())
    return method is not None and content.startswith(_MAGIC[method])


def compression_of(name: str, mime: str | None) -> str | None:
    """``"gzip"``, ``"bzip2"`` or ``"xz"`` for a compressed file, else None."""
    by_media = COMPRESSION_MEDIA_TYPES.get(mime) if mime else None
    return by_media or COMPRESSION_SUFFIXES.get(PurePosixPath(name).suffix.lower())


def inner_name(name: str) -> str:
    """``docs/README.gz`` → ``docs/README``; a name without the suffix stays as it is."""
    path = PurePosixPath(name)
    if path.suffix.lower() in COMPRESSION_SUFFIXES:
        return str(path.with_suffix(""))
    return name


def decompress(content: bytes, method: str, limits: ZipLimits | None = None) -> bytes:
    """The decompressed bytes of a whole stream (every gzip or xz member), within limits.

    Raises ``ItemError("too_large")`` past ``limits.max_unpacked_bytes`` or past
    ``limits.max_ratio`` once the output is over ``limits.ratio_floor_bytes``, and
    ``ItemError("parse_error")`` for a stream that is corrupt, truncated or empty.
    """
    limits = limits or ZipLimits()
    if not content:
        raise ItemError("parse_error", f"the {method} file is empty: 0 bytes, no stream")
    ratio_cap = max(limits.ratio_floor_bytes, limits.max_ratio * len(content))
    cap = min(limits.max_unpacked_bytes, ratio_cap)
    parts: list[bytes] = []
    size = 0
    pending = content
    members = 0
    try:
        while pending:
            members += 1
            stream = _FACTORIES[method]()
            offset = 0
            while not stream.eof:
                chunk = pending[offset : offset + _STEP]
                offset += len(chunk)
                step = stream.decompress(chunk, _STEP)
                while True:
                    size += len(step)
                    if size > cap:
                        raise _too_large(method, cap, len(content), limits)
                    parts.append(step)
                    if stream.eof or not _more_output(stream):
                        break
                    step = stream.decompress(b"", _STEP)
                if not chunk and not stream.eof:
                    raise ItemError(
                        "parse_error",
                        f"the {method} stream is truncated: it ends after {len(content):,} "
                        f"bytes without its end marker ({size:,} bytes unpacked). Copy the "
                        "file again, or exclude it.",
                    )
            pending = stream.unused_data + pending[offset:]
            if not pending.strip(b"\x00"):
                break  # zero padding after the last member (tape archives, xz padding)
    except (OSError, EOFError, zlib.error, lzma.LZMAError) as exc:
        raise ItemError(
            "parse_error",
            f"the {method} stream is corrupt ({exc}) at member {members}; copy the file "
            "again, or exclude it.",
        ) from exc
    return b"".join(parts)


def _more_output(stream: _Decompressor) -> bool:
    """Whether the decompressor holds input it has not turned into output yet."""
    if isinstance(stream, _Zlib):
        return stream.pending()
    needs_input = getattr(stream, "needs_input", True)
    return not needs_input


def _too_large(method: str, cap: int, packed: int, limits: ZipLimits) -> ItemError:
    return ItemError(
        "too_large",
        f"the {method} file ({packed:,} bytes) unpacks past {cap:,} bytes; the limits are "
        f"{limits.max_unpacked_bytes:,} bytes and {limits.max_ratio}:1 past "
        f"{limits.ratio_floor_bytes:,} bytes (a compression bomb?). It is not read, so "
        "memory stays bounded; exclude it in the source's configuration.",
    )
