"""RTF parser (striprtf): the document's text without control words, groups or pictures.

RTF is 7-bit text whose non-ASCII characters are escapes (``\\'e9``, ``\\u233``), so the
bytes are read as Latin-1 and striprtf resolves the escapes with the code page the file
declares (``\\ansicpg``, cp1252 by default). Destinations that hold no text (font and
colour tables, pictures, ``\\info``) are dropped. The title is ``{\\info{\\title …}}``.
A file that does not start with ``{\\rtf`` is ``parse_error``.

striprtf reads about 1 MB/s, one regex match per character of a picture's hex dump, and
cannot be interrupted by the time budget; so the groups that hold pictures, embedded
objects and theme data (which it drops anyway) are cut out first, with a brace scan
that jumps over their hex in C: a 5 MB picture costs milliseconds, not five seconds.
"""

from __future__ import annotations

import re

from headwater.errors import ItemError
from headwater.pipeline.parse._common import tick

RTF_VERSION = "rtf-1+striprtf"

_TITLE = re.compile(rb"\{\\title\s?([^{}]{0,1000})\}")
_CODE_PAGE = re.compile(rb"\\ansicpg(\d{3,5})")
_BINARY_GROUP = re.compile(  # not after a backslash: ``\{`` is an escaped brace
    rb"(?<!\\)\{\\(?:\*\\)?(?:pict|shppict|nonshppict|objdata|datastore|themedata|colorschememapping)"
    rb"(?![a-z])"
)
_BRACE = re.compile(rb"\\[\\{}]|[{}]")  # an escaped brace or backslash is no brace


def parse_rtf(content: bytes, charset: str | None) -> tuple[str, str | None]:
    from striprtf.striprtf import rtf_to_text

    if not content.lstrip().startswith(b"{\\rtf"):
        raise ItemError("parse_error", "the RTF file does not start with '{\\rtf'")
    declared = _CODE_PAGE.search(content[:4096])
    encoding = f"cp{int(declared.group(1))}" if declared else "cp1252"
    try:
        "".encode(encoding)
    except LookupError:
        encoding = "cp1252"
    tick()
    text: str = rtf_to_text(  # type: ignore[no-untyped-call]  # striprtf is untyped
        without_binary_groups(content).decode("latin-1"), encoding=encoding, errors="replace"
    )
    tick()
    found = _TITLE.search(content)
    title = found.group(1).decode(encoding, errors="replace").strip() if found else None
    return text, title or None


def without_binary_groups(content: bytes) -> bytes:
    """``content`` without its picture, object and theme groups (an unclosed one runs
    to the end of the file)."""
    kept: list[bytes] = []
    position = 0
    while found := _BINARY_GROUP.search(content, position):
        kept.append(content[position : found.start()])
        depth = 0
        position = len(content)
        for brace in _BRACE.finditer(content, found.start()):
            if brace.group() == b"{":
                depth += 1
            elif brace.group() == b"}":
                depth -= 1
                if depth == 0:
                    position = brace.end()
                    break
    kept.append(content[position:])
    return b"".join(kept)
