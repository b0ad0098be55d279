"""The filesystem connector's per-file objects, built for a listing of a million files.

The idea: a no-op re-sync yields one ``SourceDocument`` and one ``Checkpoint`` per file,
so they are built without the frozen dataclasses' ``__init__`` (one ``object.__setattr__``
per field, keyword arguments; ``SourceDocument.of``) and the cursor ``{"after":
[...parts]}`` without the JSON encoder, its folder part once a folder: the same objects
and text, a few times faster (tests/core/test_noop_fast_paths.py compares them with the
constructors' and ``json.dumps``'s own).
"""

from __future__ import annotations

from json.encoder import encode_basestring_ascii

from headwater.types import Checkpoint

__all__ = ["_after_cursor", "_checkpoint", "_cursor_head"]


def _after_cursor(parts: tuple[str, ...]) -> str:
    """``json.dumps({"after": list(parts)})``: the checkpoint after the file at ``parts``."""
    return _cursor_head(parts[:-1]) + encode_basestring_ascii(parts[-1]) + "]}"


def _cursor_head(folder: tuple[str, ...]) -> str:
    """The start of ``_after_cursor`` of every file in ``folder``: all but its name."""
    return '{"after": [' + "".join(encode_basestring_ascii(p) + ", " for p in folder)


def _checkpoint(cursor: str) -> Checkpoint:
    """``Checkpoint(cursor)``."""
    point = object.__new__(Checkpoint)
    point.__dict__["cursor"] = cursor
    return point
