"""DOCX parser (python-docx): paragraphs and tables in body order, headings as Markdown.

``Heading N`` styles become ``#``×N, ``Title`` becomes ``#``, list styles become ``- ``
items, a table becomes one line per row with ``|`` between cells. The title is the core
property ``title``, else the first ``Title``-styled paragraph. The archive is unpacked
under limits first (``_zip.checked_archive``), so a zip bomb is a ``too_large`` failure
and never more than the limit in memory.

Work is bounded per document too, not just bytes (``DocxLimits``): a 9 MB file of tiny
paragraphs inflates within every zip limit yet took 2.5 GB and minutes in python-docx.
Before python-docx builds its tree, each XML part's size and the paragraphs of all parts
(a byte scan, no parse) are checked; while reading, the text is capped. Past a limit the
file is a permanent ``too_large`` failure naming the limit.
"""

from __future__ import annotations

import io
import re
import zipfile
from dataclasses import dataclass
from typing import Any

from headwater.pipeline.parse._common import tick
from headwater.pipeline.parse._zip import checked_archive, too_large

DOCX_VERSION = "docx-1+python-docx"

_HEADING = re.compile(r"^heading\s*([1-9])$", re.IGNORECASE)
_PARAGRAPH = re.compile(rb"<(?:[A-Za-z_][\w.-]*:)?p[\s/>]")  # <w:p>, <w:p w:rsid…>, <a:p/>


@dataclass(frozen=True)
class DocxLimits:
    """The work one DOCX may cost. The defaults are far above any real document (a
    1,000-page book has some 20,000 paragraphs and a few MB of XML)."""

    max_paragraphs: int = 200_000  # in every XML part together: body, tables, text boxes
    max_xml_bytes: int = 64 * 1024 * 1024  # one XML part; python-docx holds its tree
    max_text_chars: int = 32 * 1024 * 1024  # the text read, checked as it grows


def parse_docx(content: bytes, charset: str | None) -> tuple[str, str | None]:
    """A DOCX document's text and title, within the default limits."""
    return read_docx(content, DocxLimits())


def read_docx(content: bytes, limits: DocxLimits) -> tuple[str, str | None]:
    """``(text, title)`` of a DOCX within ``limits``, else ``ItemError("too_large")``."""
    from docx import Document
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    archive = checked_archive(content, kind="DOCX")
    _check_work(archive, limits)
    document: Any = Document(io.BytesIO(archive))
    blocks: list[str] = []
    styled_title: str | None = None
    styles: dict[str | None, str] = {}  # style id → name: python-docx looks each one up
    size = 0
    for item in document.iter_inner_content():
        tick()
        if isinstance(item, Paragraph):
            text = str(item.text).strip()
            if not text:
                continue
            size = _grown(size, len(text), limits)
            style_id = item._p.style
            if style_id not in styles:
                styles[style_id] = str(item.style.name) if item.style is not None else ""
            style = styles[style_id]
            if style.lower() == "title":
                styled_title = styled_title or text
                blocks.append(f"# {text}")
            elif heading := _HEADING.match(style):
                blocks.append("#" * min(int(heading.group(1)), 6) + " " + text)
            elif style.lower().startswith("list"):
                blocks.append(f"- {text}")
            else:
                blocks.append(text)
        elif isinstance(item, Table):
            blocks.append(_table_text(item))
            size = _grown(size, len(blocks[-1]), limits)
    core_title = str(document.core_properties.title or "").strip()
    return "\n\n".join(b for b in blocks if b), core_title or styled_title


def _check_work(archive: bytes, limits: DocxLimits) -> None:
    """``too_large`` before any XML is parsed: a part too big for python-docx's tree, or
    more paragraphs than any real document has (counted in the bytes)."""
    paragraphs = 0
    with zipfile.ZipFile(io.BytesIO(archive)) as unpacked:  # entries are stored: no inflate
        for info in unpacked.infolist():
            if not info.filename.lower().endswith((".xml", ".rels")):
                continue
            if info.file_size > limits.max_xml_bytes:
                raise too_large(
                    "DOCX",
                    f"part {info.filename!r} is {info.file_size:,} bytes of XML; the limit is "
                    f"{limits.max_xml_bytes:,}",
                )
            for _ in _PARAGRAPH.finditer(unpacked.read(info)):
                paragraphs += 1
                if paragraphs > limits.max_paragraphs:
                    raise too_large(
                        "DOCX",
                        f"holds more than {limits.max_paragraphs:,} paragraphs (counted up to "
                        f"part {info.filename!r})",
                    )


def _grown(size: int, more: int, limits: DocxLimits) -> int:
    """The text read so far, ``too_large`` past ``max_text_chars``."""
    size += more
    if size > limits.max_text_chars:
        raise too_large("DOCX", f"has more than {limits.max_text_chars:,} characters of text")
    return size


def _table_text(table: Any) -> str:
    rows: list[str] = []
    for row in table.rows:
        cells: list[str] = []
        for cell in row.cells:
            value = " ".join(str(cell.text).split())
            if not cells or cells[-1] != value:  # merged cells repeat their text
                cells.append(value)
        if any(cells):
            rows.append(" | ".join(cells))
    return "\n".join(rows)
