"""Include/exclude globs over slash-separated paths and keys, shared by every connector.

``*`` matches within one path segment, ``**`` across segments (``**/`` also matches no
directory at all), ``?`` one character. A pattern without a ``/`` matches the last
segment at any depth, as in ``.gitignore``: ``*.md`` selects every Markdown file.
"""

from __future__ import annotations

import re
from collections.abc import Sequence


def compile_glob(pattern: str) -> re.Pattern[str]:
    """A regular expression matching whole keys for one glob pattern."""
    if "/" not in pattern:
        pattern = "**/" + pattern
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out), re.DOTALL)


# No key holds a NUL: a pattern matching "FOLDER/" + this matches whatever is in FOLDER.
_ANY_CHILD = "/\x00"


class KeyFilter:
    """Selects keys matching any ``include`` (all when empty) and no ``exclude`` glob.

    As in ``.gitignore``, an exclude that names a folder excludes everything under it:
    ``drafts``, ``drafts/`` (folders only) and ``drafts/**`` all leave out ``drafts/a.md``
    and ``drafts/old/b.md``; ``excludes_folder`` lets a walk skip such a folder unread.
    """

    def __init__(self, include: Sequence[str], exclude: Sequence[str]) -> None:
        self._include = [compile_glob(p) for p in include]
        self._exclude = [compile_glob(p) for p in exclude if not p.endswith("/")]
        self._folders = [compile_glob(p.rstrip("/")) for p in exclude if p.rstrip("/")]
        # the default, ``**/*`` (or ``**``, or no include) and no exclude, selects every key
        self._everything = not exclude and (not include or bool({"**/*", "**"} & set(include)))

    def matches(self, key: str) -> bool:
        """Whether ``key`` itself matches an include and no exclude, its folders unchecked
        (for a walk that has already asked ``excludes_folder`` of each one)."""
        if self._everything:
            return True
        if self._include and not any(p.fullmatch(key) for p in self._include):
            return False
        return not any(p.fullmatch(key) for p in self._exclude)

    def excludes_folder(self, folder: str) -> bool:
        """Whether every key under ``folder`` (a path without a trailing slash) is excluded."""
        return any(p.fullmatch(folder) or p.fullmatch(folder + _ANY_CHILD) for p in self._folders)

    def __call__(self, key: str) -> bool:
        if not self.matches(key):
            return False
        parts = key.split("/")[:-1]
        return not any(self.excludes_folder("/".join(parts[: n + 1])) for n in range(len(parts)))
