"""Plain text and Markdown parsers.

Markdown stays Markdown (the chunker splits on its headings); its title comes from YAML
front matter ``title:`` or the first ``# `` heading, and front matter leaves the text.
"""

from __future__ import annotations

import re

from headwater.pipeline.parse._common import decode_text

TEXT_VERSION = "text-2"  # 2: a name that names no format is read by its bytes
MARKDOWN_VERSION = "markdown-1"

_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?\n)(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
_FRONT_TITLE = re.compile(r"^title:[ \t]*(.+?)[ \t]*$", re.MULTILINE)
_H1 = re.compile(r"^#[ \t]+(.+?)[ \t#]*$", re.MULTILINE)


def parse_text(content: bytes, charset: str | None) -> tuple[str, str | None]:
    """Plain text, decoded, and no title."""
    return decode_text(content, charset), None


def parse_markdown(content: bytes, charset: str | None) -> tuple[str, str | None]:
    """A Markdown document's text and title (front matter or first heading)."""
    text = decode_text(content, charset).replace("\r\n", "\n")
    title: str | None = None
    front = _FRONT_MATTER.match(text)
    if front:
        found = _FRONT_TITLE.search(front.group(1))
        if found:
            title = found.group(1).strip().strip("\"'")
        text = text[front.end() :]
    if not title:
        heading = _H1.search(_without_code(text))
        title = heading.group(1) if heading else None
    return text, title


def _without_code(text: str) -> str:
    """The text with fenced code blocks blanked, so ``# comment`` lines are no title."""
    return re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
