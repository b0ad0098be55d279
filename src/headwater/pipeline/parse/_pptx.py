"""PPTX parser (python-pptx): one section per slide, its title as the heading.

Each slide becomes ``# <slide title>`` (``# Slide N`` when it has none), then the text
of its other shapes in the slide's order (group shapes opened, tables as one ``a | b``
line per row), then its speaker notes as ``Notes: …``. The title is the core property
``title``, else the first slide's title. Like DOCX, the archive is unpacked under the zip
limits (``_zip.checked_archive``) before python-pptx opens it.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from typing import Any

from headwater.pipeline.parse._common import tick
from headwater.pipeline.parse._zip import checked_archive

PPTX_VERSION = "pptx-1+python-pptx"


def parse_pptx(content: bytes, charset: str | None) -> tuple[str, str | None]:
    """A PPTX presentation's text and title."""
    from pptx import Presentation

    presentation: Any = Presentation(io.BytesIO(checked_archive(content, kind="PPTX")))
    sections: list[str] = []
    first_title: str | None = None
    for number, slide in enumerate(presentation.slides, 1):
        tick()
        title_shape = slide.shapes.title
        title = _one_line(title_shape.text_frame.text) if title_shape is not None else ""
        first_title = first_title or title or None
        blocks = [f"# {title or f'Slide {number}'}"]
        title_id = title_shape.shape_id if title_shape is not None else None
        blocks += _shape_texts(s for s in slide.shapes if s.shape_id != title_id)
        if slide.has_notes_slide:
            notes = slide.notes_slide.notes_text_frame
            text = notes.text.strip() if notes is not None else ""
            if text:
                blocks.append(f"Notes: {text}")
        sections.append("\n\n".join(blocks))
    core_title = str(presentation.core_properties.title or "").strip()
    return "\n\n".join(sections), core_title or first_title


def _shape_texts(shapes: Iterable[Any]) -> list[str]:
    blocks: list[str] = []
    for shape in shapes:
        if getattr(shape, "shape_type", None) == 6:  # MSO_SHAPE_TYPE.GROUP
            blocks += _shape_texts(shape.shapes)
        elif getattr(shape, "has_table", False):
            rows = [
                " | ".join(_one_line(cell.text) for cell in row.cells) for row in shape.table.rows
            ]
            blocks.append("\n".join(r for r in rows if r.strip(" |")))
        elif getattr(shape, "has_text_frame", False):
            text = shape.text_frame.text.strip()
            if text:
                blocks.append(text)
    return [b for b in blocks if b]


def _one_line(text: str) -> str:
    return " ".join(text.split())
