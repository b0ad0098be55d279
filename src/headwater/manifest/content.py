"""The content store: normalized text, zstd-compressed, keyed by its checksum.

Written before the manifest row that points at it (a crash leaves at worst an orphan
file, never a row without content), read when an index is rebuilt or re-applied, so no
source is ever re-read for indexing. Writes are atomic (temp file + rename). A put of
content already stored refreshes the file's mtime: the garbage walk
(``manifest/garbage.py``) never deletes an object younger than an hour, so an object
about to be pointed at again by a commit in flight is safe from it.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import zstandard

from headwater.errors import ContentMissing


class ContentStore:
    """Normalized texts on disk under ``root``, zstd-compressed, one file per checksum."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)
        self._compressor = zstandard.ZstdCompressor(level=3)
        self._decompressor = zstandard.ZstdDecompressor()

    def path(self, checksum: str) -> Path:
        """The file that holds (or would hold) the text of ``checksum``."""
        return self.root / checksum[:2] / f"{checksum}.zst"

    def put(self, checksum: str, text: str) -> None:
        """Store ``text`` under ``checksum`` atomically; if already stored, refresh its mtime."""
        target = self.path(checksum)
        if target.exists():
            try:
                os.utime(target)  # young again: see the module docstring
                return
            except FileNotFoundError:
                pass  # collected between the check and the touch: write it anew
        target.parent.mkdir(parents=True, exist_ok=True)
        data = self._compressor.compress(text.encode("utf-8"))
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def prefixes(self) -> list[Path]:
        """The prefix directories (the first two hex digits of a checksum), sorted."""
        if not self.root.is_dir():
            return []
        return sorted(
            p for p in self.root.iterdir() if p.is_dir() and len(p.name) == 2 and not p.is_symlink()
        )

    @staticmethod
    def files(prefix: Path) -> Iterator[Path]:
        """The files in one prefix directory: ``{checksum}.zst`` objects and ``.tmp-*``
        leftovers of interrupted writes."""
        for entry in os.scandir(prefix):
            if entry.is_file(follow_symlinks=False):
                yield Path(entry.path)

    def get(self, checksum: str) -> str:
        """The text stored under ``checksum``, or ContentMissing naming the fix."""
        target = self.path(checksum)
        try:
            data = target.read_bytes()
        except FileNotFoundError as exc:
            raise ContentMissing(
                f"content {checksum} is missing from the content store at {self.root}; "
                "the state dir was changed by hand. Run `headwater sync` to re-read it."
            ) from exc
        return self._decompressor.decompress(data).decode("utf-8")
