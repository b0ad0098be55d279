"""``[identity] aliases_file``: aliases kept in a CSV file, one ``alias,user`` row per line.

CSV rather than TOML because directories and spreadsheets export it (one row per alias,
thousands of them), and because every problem can then name its line: a TOML reader
gives no line for a key, so a bad value could not be located. A first row
``alias,user`` is a header; blank lines and lines starting with ``#`` are skipped; a
field may be quoted as CSV allows. A row that is not exactly two non-empty fields, or a
file that is not UTF-8, is a ``ConfigError`` naming the file and the line; the names
themselves are checked with every other alias (``IdentityAliases.from_entries``), each
named by its ``FILE line N`` origin.

``FileSignature`` tells whether the file changed (size, modification time, inode: an
editor's atomic replace too), so the alias source re-reads it at the next search without
re-reading any source.
"""

from __future__ import annotations

import csv
import io
import os
from dataclasses import dataclass
from pathlib import Path

from headwater.errors import ConfigError
from headwater.search.aliases import AliasEntry

HEADER = ("alias", "user")


@dataclass(frozen=True)
class FileSignature:
    """What changes when a file is written or replaced: size, times and inode."""

    size: int
    mtime_ns: int
    ctime_ns: int
    inode: int

    @classmethod
    def of(cls, path: Path) -> FileSignature:
        """The file's signature now (``OSError`` if it cannot be read)."""
        found = os.stat(path)
        return cls(found.st_size, found.st_mtime_ns, found.st_ctime_ns, found.st_ino)


def origin(path: Path, line: int) -> str:
    """How an alias of ``path`` at ``line`` is named in ``whois`` and in errors."""
    return f"{path} line {line}"


def read_alias_file(path: Path) -> list[AliasEntry]:
    """The file's ``alias,user`` rows, each with its line; ``ConfigError`` naming the file
    and line for a file that cannot be read or a row that is not two non-empty fields."""
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise ConfigError(
            f"[identity] aliases_file {path} cannot be read ({exc.strerror or exc}); "
            "expected a CSV file of alias,user rows; create it or fix the path (relative "
            "paths are resolved against the config's folder)"
        ) from None
    except UnicodeDecodeError as exc:
        line = text_line(path.read_bytes(), exc.start)
        raise ConfigError(
            f"{origin(path, line)}: the file is not UTF-8 ({exc.reason}); save it as UTF-8"
        ) from None
    entries: list[AliasEntry] = []
    problems: list[str] = []
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        for row in reader:
            line = reader.line_num
            cells = [cell.strip() for cell in row]
            if not any(cells) or cells[0].startswith("#"):
                continue
            if not entries and not problems and tuple(c.lower() for c in cells) == HEADER:
                continue
            if len(cells) != 2 or not all(cells):
                problems.append(
                    f"{origin(path, line)}: {','.join(row)[:120]!r} is not an alias,user row; "
                    "expected two non-empty fields, e.g. github:ann,ann@corp.com"
                )
                continue
            entries.append(AliasEntry(cells[0], cells[1], origin(path, line)))
    except csv.Error as exc:
        problems.append(f"{origin(path, reader.line_num)}: {exc}; fix the quoting there")
    if problems:
        raise ConfigError("\n".join(problems))
    return entries


def text_line(data: bytes, offset: int) -> int:
    """The 1-based line of byte ``offset`` in ``data``."""
    return data.count(b"\n", 0, offset) + 1
