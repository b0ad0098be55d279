"""DOCX parser (python-docx): paragraphs and tables in body order, headings as Markdown.

``Heading N`` styles become ``#``×N, ``Title`` becomes ``#``, list styles become ``- ``
items, a table becomes one line per row with ``|`` between cells. The title is the core
property ``title``, else the first ``Title``-styled paragraph. The archive is unpacked
under limits first (``_zip.checked_archive``), so a zip bomb is a ``too_large`` failure
and never more than the limit in memory.
"""

from __future__ import annotations

import io
import re
from typing import Any

from headwater.pipeline.parse._zip import checked_archive

DOCX_VERSION = "docx-1+python-docx"

_HEADING = re.compile(r"^heading\s*([1-9])$", re.IGNORECASE)


def parse_docx(content: bytes, charset: str | None) -> tuple[str, str | None]:
    from docx import Document
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    document: Any = Document(io.BytesIO(checked_archive(content, kind="DOCX")))
    blocks: list[str] = []
    styled_title: str | None = None
    for item in document.iter_inner_content():
        if isinstance(item, Paragraph):
            text = str(item.text).strip()
            if not text:
                continue
            style = str(item.style.name) if item.style is not None else ""
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
    core_title = str(document.core_properties.title or "").strip()
    return "\n\n".join(b for b in blocks if b), core_title or styled_title


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
