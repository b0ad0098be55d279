"""The content store: normalized text, zstd-compressed, keyed by its checksum.

Written before the manifest row that points at it (a crash leaves at worst an orphan
file, never a row without content), read when an index is rebuilt or re-applied, so no
source is ever re-read for indexing. Writes are atomic (temp file + rename).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import zstandard

from headwater.errors import FatalError


class ContentStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)
        self._compressor = zstandard.ZstdCompressor(level=3)
        self._decompressor = zstandard.ZstdDecompressor()

    def path(self, checksum: str) -> Path:
        return self.root / checksum[:2] / f"{checksum}.zst"

    def has(self, checksum: str) -> bool:
        return self.path(checksum).exists()

    def put(self, checksum: str, text: str) -> None:
        target = self.path(checksum)
        if target.exists():
            return
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

    def get(self, checksum: str) -> str:
        target = self.path(checksum)
        try:
            data = target.read_bytes()
        except FileNotFoundError as exc:
            raise FatalError(
                f"content {checksum} is missing from the content store at {self.root}; "
                "the state dir was changed by hand. Run `headwater sync` to re-read it."
            ) from exc
        return self._decompressor.decompress(data).decode("utf-8")
