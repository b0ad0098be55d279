"""Zip bombs: a DOCX that inflates to 200 MB is refused with memory that stays small.

The bombs are generated here (deflate of zeros, 1 MB at a time, so generating one costs
no memory either) and packed by a tiny zip writer, which can also write the sizes a real
bomb lies about. Peak memory is measured with ``tracemalloc``: every byte string that
zlib inflates is a traced allocation.
"""

from __future__ import annotations

import io
import struct
import tracemalloc
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from test_parse import make_docx

from headwater.errors import ItemError
from headwater.pipeline.parse import parse
from headwater.pipeline.parse._zip import ZipLimits, checked_archive

BOMB_BYTES = 200 * 1024 * 1024
SMALL_PEAK = 16 * 1024 * 1024


@dataclass(frozen=True)
class Entry:
    name: str
    packed: bytes
    crc: int
    size: int  # the unpacked size the archive declares (a bomb may lie)
    method: int = zipfile.ZIP_DEFLATED


def deflate_zeros(total: int) -> tuple[bytes, int]:
    """Raw deflate of ``total`` zero bytes, and their CRC, 1 MB at a time."""
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = bytes(1024 * 1024)
    parts, crc = [], 0
    for _ in range(total // len(block)):
        parts.append(packer.compress(block))
        crc = zlib.crc32(block, crc)
    parts.append(packer.flush())
    return b"".join(parts), crc


def write_zip(entries: list[Entry]) -> bytes:
    """A zip archive with exactly the headers given (sizes included)."""
    out, central = io.BytesIO(), io.BytesIO()
    for entry in entries:
        name = entry.name.encode()
        offset = out.tell()
        fields = (20, 0, entry.method, 0, 0x21, entry.crc, len(entry.packed), entry.size)
        out.write(struct.pack("<4s5H3L2H", b"PK\x03\x04", *fields, len(name), 0))
        out.write(name + entry.packed)
        central.write(struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, *fields, len(name),
                                  0, 0, 0, 0, 0, offset))  # fmt: skip
        central.write(name)
    directory = central.getvalue()
    start = out.tell()
    out.write(directory)
    out.write(struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, len(entries), len(entries),
                          len(directory), start, 0))  # fmt: skip
    return out.getvalue()


def docx_entries() -> list[Entry]:
    """The entries of a real DOCX, deflated, with honest headers."""
    entries = []
    with zipfile.ZipFile(io.BytesIO(make_docx())) as archive:
        for info in archive.infolist():
            data = archive.read(info)
            packer = zlib.compressobj(6, zlib.DEFLATED, -15)
            packed = packer.compress(data) + packer.flush()
            entries.append(Entry(info.filename, packed, zlib.crc32(data), len(data)))
    return entries


@pytest.fixture(scope="module")
def zeros() -> tuple[bytes, int]:
    return deflate_zeros(BOMB_BYTES)


def bomb(zeros: tuple[bytes, int], *, declared: int, crc: int) -> bytes:
    packed, _ = zeros
    entries = [e for e in docx_entries() if e.name != "word/document.xml"]
    entries.append(Entry("word/document.xml", packed, crc, declared))
    return write_zip(entries)


def peak_while(action: Callable[[], object]) -> tuple[int, BaseException | None]:
    tracemalloc.start()
    error: BaseException | None = None
    try:
        action()
    except ItemError as exc:
        error = exc
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return peak, error


def test_the_writer_makes_a_docx_that_parses() -> None:
    parsed = parse(write_zip(docx_entries()), name="report.docx", media_type=None)
    assert "Revenue grew in every region." in parsed.text


def test_a_bomb_with_honest_sizes_is_too_large_without_inflating(
    zeros: tuple[bytes, int],
) -> None:
    content = bomb(zeros, declared=BOMB_BYTES, crc=zeros[1])
    assert len(content) < 1024 * 1024
    peak, error = peak_while(lambda: parse(content, name="bomb.docx", media_type=None))
    assert isinstance(error, ItemError)
    assert error.error_class == "too_large" and error.permanent
    assert "word/document.xml" in str(error) and "exclude" in str(error)
    assert peak < SMALL_PEAK, f"peak {peak:,} bytes"


def test_a_bomb_that_lies_about_its_size_is_too_large_with_small_memory(
    zeros: tuple[bytes, int],
) -> None:
    # Declares 10 kB with the CRC of the first 10 kB: a reader that trusts the header
    # inflates all 200 MB at once and then quietly cuts it to the declared size.
    content = bomb(zeros, declared=10_000, crc=zlib.crc32(bytes(10_000)))
    peak, error = peak_while(lambda: parse(content, name="liar.docx", media_type=None))
    assert isinstance(error, ItemError)
    assert error.error_class == "too_large" and error.permanent
    assert "10,000" in str(error) and "false size" in str(error)
    assert peak < SMALL_PEAK, f"peak {peak:,} bytes"


def test_the_total_unpacked_size_is_capped() -> None:
    entries = [Entry(f"part{i}.xml", *deflate_zeros(1024 * 1024),
                     size=1024 * 1024) for i in range(3)]  # fmt: skip
    content = write_zip(entries)
    limits = ZipLimits(max_unpacked_bytes=2 * 1024 * 1024, max_ratio=10_000)
    with pytest.raises(ItemError, match="unpacks to more than 2,097,152 bytes") as raised:
        checked_archive(content, kind="DOCX", limits=limits)
    assert raised.value.error_class == "too_large"
    assert checked_archive(content, kind="DOCX", limits=ZipLimits(max_ratio=10_000))


def test_too_many_entries_and_other_methods_are_refused() -> None:
    entries = [Entry(f"e{i}", b"\x03\x00", 0, 0) for i in range(5)]
    with pytest.raises(ItemError, match="5 entries") as raised:
        checked_archive(write_zip(entries), kind="DOCX", limits=ZipLimits(max_entries=4))
    assert raised.value.error_class == "too_large"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_BZIP2) as archive:
        archive.writestr("word/document.xml", "<w:document/>")
    with pytest.raises(ItemError, match="method 12") as raised:
        parse(buffer.getvalue(), name="odd.docx", media_type=None)
    assert raised.value.error_class == "unsupported_type"


def test_a_wrong_checksum_is_a_parse_error() -> None:
    entries = docx_entries()
    broken = [Entry(e.name, e.packed, e.crc ^ 1, e.size) for e in entries]
    with pytest.raises(ItemError, match="corrupt") as raised:
        parse(write_zip(broken), name="broken.docx", media_type=None)
    assert raised.value.error_class == "parse_error"
