"""Safe display forms of names a source hands us (file names, keys, guids).

A file name may hold bytes that are not UTF-8 (Python keeps them as lone surrogates) or
control characters (newlines, escapes, NUL). Neither may reach a manifest row, a failure
message or a terminal raw: ``printable`` spells both as backslash escapes, and
``is_utf8`` tells a connector whether a name can be stored as an object id at all.
"""

from __future__ import annotations

import os


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
