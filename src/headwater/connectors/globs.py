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


class KeyFilter:
    """Selects keys matching any ``include`` (all when empty) and no ``exclude`` glob."""

    def __init__(self, include: Sequence[str], exclude: Sequence[str]) -> None:
        self._include = [compile_glob(p) for p in include]
        self._exclude = [compile_glob(p) for p in exclude]

    def __call__(self, key: str) -> bool:
        if self._include and not any(p.fullmatch(key) for p in self._include):
            return False
        return not any(p.fullmatch(key) for p in self._exclude)
