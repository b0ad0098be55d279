"""Safe forms of the strings a source hands us (file names, keys, guids, JSON text).

A file name may hold bytes that are not UTF-8 (Python keeps them as lone surrogates) or
control characters (newlines, escapes, NUL). Neither may reach a manifest row, a failure
message or a terminal raw: ``printable`` spells both as backslash escapes, and
``is_utf8`` tells a connector whether a name can be stored as an object id at all.
JSON may hold a lone surrogate escape (``"\\ud800"``) that no database stores:
``valid_unicode`` turns each into U+FFFD, and ``storable`` also drops NULs (PostgreSQL
refuses them) from text that only describes an object.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

_SURROGATE = re.compile("[\ud800-\udfff]")
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def valid_unicode(text: str) -> str:
    """``text`` with every lone surrogate as U+FFFD (as a decoder treats a bad byte)."""
    if text.isascii():  # a flag CPython keeps on every string: ASCII holds no surrogate
        return text
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def storable(text: str) -> str:
    """``text`` as every manifest engine stores it: lone surrogates as U+FFFD, no NUL."""
    return valid_unicode(text.replace("\x00", "")) if _UNSTORABLE.search(text) else text


def all_storable(texts: Iterable[str]) -> bool:
    """Whether none of ``texts`` holds a NUL or a lone surrogate (one search for all)."""
    return not _UNSTORABLE.search("".join(texts))


def is_storable(text: str | None) -> bool:
    """Whether ``text`` (None counts) holds neither a NUL nor a lone surrogate."""
    return text is None or not _UNSTORABLE.search(text)


def is_utf8(name: str) -> bool:
    """Whether ``name`` encodes to UTF-8 (false for undecodable bytes from the OS)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def printable(name: str) -> str:
    """``name`` with undecodable bytes as ``\\xNN`` and control characters escaped.

    Printable text, including every non-ASCII letter, is kept as it is.
    """
    if not is_utf8(name):
        try:
            name = os.fsencode(name).decode("utf-8", "backslashreplace")
        except UnicodeError:  # a surrogate the OS did not produce
            name = name.encode("utf-8", "backslashreplace").decode("ascii")
    out: list[str] = []
    for char in name:
        code = ord(char)
        if code < 0x20 or 0x7F <= code < 0xA0:
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(char, f"\\x{code:02x}"))
        else:
            out.append(char)
    return "".join(out)
