"""The content store: normalized text, zstd-compressed, keyed by its checksum.

Written before the manifest row that points at it (a crash leaves at worst an orphan
object, never a row without content), read when an index is rebuilt or re-applied, so no
source is ever re-read for indexing. ``ContentStore`` is the contract; two stores keep
it: ``FolderContentStore`` (the default, ``state_dir/content``: atomic temp file +
rename) and ``S3ContentStore`` (``[content] url = "s3://bucket/prefix"``, in
``content_s3``: hosts share no disk). Both lay objects out alike, ``{checksum[:2]}/
{checksum}.zst``, and a put of content already stored makes the object young again: the
garbage walk (``manifest/garbage.py``) never deletes an object younger than an hour, so
an object about to be pointed at again by a commit in flight is safe from it.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import zstandard

from headwater.errors import ContentMissing

SUFFIX = ".zst"
TEMP_PREFIX = ".tmp-"  # an interrupted folder write leaves one of these


@dataclass(frozen=True)
class StoredObject:
    """One entry under a prefix of a content store, as the garbage walk sees it."""

    name: str  # ``{checksum}.zst``, or a ``.tmp-…`` leftover of an interrupted write
    size: int
    modified: float  # POSIX seconds of the last write (or refresh)


class ContentStore(Protocol):
    """Where normalized text lives, by checksum: put before commit, get to (re)index."""

    @property
    def location(self) -> str:
        """Where the store is, for messages (a folder or an ``s3://`` url)."""
        ...

    def put(self, checksum: str, text: str) -> None:
        """Store ``text`` under ``checksum`` (or make the stored object young again)."""
        ...

    def get(self, checksum: str) -> str:
        """The text stored under ``checksum``; ``ContentMissing`` when there is none."""
        ...

    def prefixes(self) -> list[str]:
        """The prefix names (the first two hex digits of a checksum) present, sorted."""
        ...

    def objects(self, prefix: str) -> Iterator[StoredObject]:
        """Every entry under one prefix, ours or not (the walk tells them apart)."""
        ...

    def stat(self, prefix: str, name: str) -> StoredObject | None:
        """One entry as it is now; None when it is gone."""
        ...

    def remove(self, prefix: str, name: str) -> bool:
        """Delete one entry; False when it was already gone."""
        ...


class Codec(threading.local):
    """zstd (level 3) for stored text, shared by every store. A zstd context must not be
    used by two threads at once (``serve`` answers pushes on several), so each thread
    gets its own compressor and decompressor."""

    def __init__(self) -> None:
        self._compressor = zstandard.ZstdCompressor(level=3)
        self._decompressor = zstandard.ZstdDecompressor()

    def pack(self, text: str) -> bytes:
        """Compressed UTF-8 bytes of ``text``."""
        return self._compressor.compress(text.encode("utf-8"))

    def unpack(self, data: bytes) -> str:
        """The text of stored bytes."""
        return self._decompressor.decompress(data).decode("utf-8")


def missing(checksum: str, location: str) -> ContentMissing:
    """The error for content a manifest row names but the store does not hold."""
    return ContentMissing(
        f"content {checksum} is missing from the content store at {location}; "
        "it was deleted or the store was changed by hand. Run `headwater sync --full` "
        "for the documents' sources to read it again."
    )


class FolderContentStore:
    """The content store in a local folder (``state_dir/content`` by default)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)
        self._codec = Codec()

    @property
    def location(self) -> str:
        """The folder's path."""
        return str(self.root)

    def path(self, checksum: str) -> Path:
        """The file that holds ``checksum``'s text."""
        return self.root / checksum[:2] / f"{checksum}{SUFFIX}"

    def put(self, checksum: str, text: str) -> None:
        """Write atomically (temp file, fsync, rename); an existing file is touched."""
        target = self.path(checksum)
        if target.exists():
            try:
                os.utime(target)  # young again: see the module docstring
                return
            except FileNotFoundError:
                pass  # collected between the check and the touch: write it anew
        target.parent.mkdir(parents=True, exist_ok=True)
        data = self._codec.pack(text)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=TEMP_PREFIX)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def get(self, checksum: str) -> str:
        """Read and decompress one file."""
        try:
            data = self.path(checksum).read_bytes()
        except FileNotFoundError as exc:
            raise missing(checksum, self.location) from exc
        return self._codec.unpack(data)

    def prefixes(self) -> list[str]:
        """The two-character prefix directories, sorted (links are never followed)."""
        if not self.root.is_dir():
            return []
        return sorted(
            p.name
            for p in self.root.iterdir()
            if p.is_dir() and len(p.name) == 2 and not p.is_symlink()
        )

    def objects(self, prefix: str) -> Iterator[StoredObject]:
        """The plain files of one prefix directory."""
        for entry in os.scandir(self.root / prefix):
            if entry.is_file(follow_symlinks=False):
                try:
                    info = entry.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                yield StoredObject(entry.name, info.st_size, info.st_mtime)

    def stat(self, prefix: str, name: str) -> StoredObject | None:
        """The file's size and mtime now."""
        try:
            info = (self.root / prefix / name).stat()
        except FileNotFoundError:
            return None
        return StoredObject(name, info.st_size, info.st_mtime)

    def remove(self, prefix: str, name: str) -> bool:
        """Unlink one file."""
        try:
            os.unlink(self.root / prefix / name)
        except FileNotFoundError:
            return False
        return True
