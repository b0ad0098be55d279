"""Lightweight markup: reStructuredText (docutils), AsciiDoc and Org (headings mapped).

reStructuredText is parsed by docutils into a document tree and written back as plain
text with Markdown headings (section depth N → ``#``×N), list items as ``- `` and
literal blocks kept. File inclusion and raw passthrough are off (an ``include::`` of
``/etc/passwd`` reads nothing), and docutils' own reports never reach the text. A
directive docutils does not know (Sphinx's ``toctree``, ``automodule``…) leaves nothing;
the text of an unknown role (``:ref:`x```) stays. The title is the first section title.

AsciiDoc and Org have no maintained Python reader: they are read as text whose heading
lines become Markdown headings (``== Part`` / ``** Part`` → ``## Part``), so the chunker
cuts sections there, and the title is ``= Title`` / ``#+TITLE:``; the rest of the markup
stays as written.
"""

from __future__ import annotations

import io
import re
from typing import Any

from headwater.pipeline.parse._common import decode_text

RST_VERSION = "rst-1+docutils"
ASCIIDOC_VERSION = "asciidoc-1"
ORG_VERSION = "org-1"

_ADOC_HEADING = re.compile(r"^(={1,6})[ \t]+(\S.*?)[ \t]*=*[ \t]*$")
_ORG_HEADING = re.compile(r"^(\*{1,6})[ \t]+(\S.*?)[ \t]*$")
_ORG_TITLE = re.compile(r"^#\+TITLE:[ \t]*(.+?)[ \t]*$", re.IGNORECASE | re.MULTILINE)
_FENCE = re.compile(r"^(----|\.\.\.\.|```)[ \t]*$")
_ROLE = re.compile(r":[\w.+-]+(?::[\w.+-]+)*:`([^`]*?)\s*(?:<[^`>]*>)?`")


def parse_rst(content: bytes, charset: str | None) -> tuple[str, str | None]:
    """A reStructuredText document's text and title."""
    from docutils.core import publish_doctree

    source = decode_text(content, charset)
    doctree = publish_doctree(
        source,
        settings_overrides={
            "_disable_config": True,
            "file_insertion_enabled": False,
            "raw_enabled": False,
            "report_level": 5,  # no system messages in the tree's text
            "halt_level": 5,  # never stop on an error: keep what parses
            "warning_stream": io.StringIO(),
            "doctitle_xform": False,
            "sectsubtitle_xform": False,
            "input_encoding": "unicode",
            "syntax_highlight": "none",
        },
    )
    writer = _RstText()
    writer.walk(doctree, 0)
    return "\n\n".join(writer.blocks), writer.title


def _skipped() -> tuple[type, ...]:
    from docutils import nodes

    return (nodes.system_message, nodes.comment, nodes.substitution_definition)


class _RstText:
    """Plain text of a docutils tree: one block per paragraph-level node."""

    def __init__(self) -> None:
        self.blocks: list[str] = []
        self.title: str | None = None

    def walk(self, node: Any, depth: int) -> None:
        from docutils import nodes

        skipped = _skipped()
        for child in node.children:
            if isinstance(child, skipped):
                continue
            if isinstance(child, nodes.section):
                self.walk(child, depth + 1)
            elif isinstance(child, nodes.title):
                text = _one_line(child.astext())
                if text:
                    self.title = self.title or text
                    self.blocks.append("#" * max(1, min(depth, 6)) + " " + text)
            elif isinstance(child, nodes.literal_block):
                self.blocks.append(child.astext())
            elif isinstance(child, nodes.list_item):
                self.blocks.append("- " + _one_line(child.astext()))
            elif isinstance(child, nodes.TextElement):
                text = _one_line(child.astext())
                if text:
                    self.blocks.append(text)
            elif isinstance(child, nodes.Element):
                self.walk(child, depth)


def _one_line(text: str) -> str:
    """One line of text; an unknown role (``:ref:`the guide <guide>```) as its text."""
    return _ROLE.sub(lambda found: found.group(1), " ".join(text.split()))


def parse_asciidoc(content: bytes, charset: str | None) -> tuple[str, str | None]:
    """An AsciiDoc document's text and title."""
    return _headed(decode_text(content, charset), _ADOC_HEADING, None)


def parse_org(content: bytes, charset: str | None) -> tuple[str, str | None]:
    """An Org document's text and title."""
    text = decode_text(content, charset)
    declared = _ORG_TITLE.search(text)
    return _headed(text, _ORG_HEADING, declared.group(1) if declared else None)


def _headed(text: str, heading: re.Pattern[str], title: str | None) -> tuple[str, str | None]:
    """``text`` with its heading lines (outside delimited blocks) as Markdown headings."""
    lines: list[str] = []
    in_block = False
    for line in text.replace("\r\n", "\n").split("\n"):
        if _FENCE.match(line):
            in_block = not in_block
        found = None if in_block else heading.match(line)
        if found:
            level = len(found.group(1))
            title = title or (found.group(2) if level == 1 else None)
            lines.append("#" * level + " " + found.group(2))
        else:
            lines.append(line)
    return "\n".join(lines), title
