"""OpenDocument (ODT, ODS, ODP): the zip's ``content.xml`` read with defusedxml.

One reader for the three: the archive is unpacked under the zip limits
(``_zip.checked_archive``), ``META-INF/manifest.xml`` is checked for encryption (an
encrypted part is ``encrypted``: ciphertext, unreadable without the password), then
``content.xml`` is parsed by defusedxml (entities never expanded) and walked:

- ODT: headings (``text:h``) as ``#``×outline level, paragraphs, list items as ``- ``,
  tables as one ``a | b`` line per row, sections opened;
- ODS: one section per sheet (``# Sheet name``), rows rendered like XLSX
  (``_table.render_rows``: ``header: value; …``) under the same row and cell caps; a
  repeated row or cell (``number-rows-repeated``) counts as often as it repeats, and
  trailing empty runs (LibreOffice pads every sheet to a million rows) are dropped.
  Streamed (``iterparse``, each row cleared once read), so memory follows the text;
- ODP: one section per slide, ``# <title frame>`` (``# Slide N`` without one), the other
  frames' text and tables, then ``Notes: …``.

ODT and ODP build the tree, so their ``content.xml`` may hold at most
``MAX_TREE_XML_BYTES`` (64 MiB, as for a DOCX part), else ``too_large``. The title is
``dc:title`` of ``meta.xml``, else the first heading or slide title. odfpy (last
release 2020) was not used to read: it builds a full DOM of every part through its own
SAX handler, with no streaming; ODF's XML is simple to walk, and defusedxml is already a
dependency. odfpy writes the test files.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator
from typing import Any, Final

from defusedxml import ElementTree

from headwater.errors import ItemError
from headwater.pipeline.parse._common import tick
from headwater.pipeline.parse._table import _Budget, render_rows
from headwater.pipeline.parse._zip import checked_archive, too_large

ODT_VERSION = "odt-1"
ODS_VERSION = "ods-1"
ODP_VERSION = "odp-1"

MAX_TREE_XML_BYTES: Final = 64 * 1024 * 1024
"""The most ``content.xml`` an ODT or ODP may hold: its tree is built in memory."""

_NS: Final = {
    "office": "urn:oasis:names:tc:opendocument:xmlns:office:1.0",
    "text": "urn:oasis:names:tc:opendocument:xmlns:text:1.0",
    "table": "urn:oasis:names:tc:opendocument:xmlns:table:1.0",
    "draw": "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0",
    "presentation": "urn:oasis:names:tc:opendocument:xmlns:presentation:1.0",
    "manifest": "urn:oasis:names:tc:opendocument:xmlns:manifest:1.0",
    "dc": "http://purl.org/dc/elements/1.1/",
}


def _q(name: str) -> str:
    prefix, local = name.split(":")
    return f"{{{_NS[prefix]}}}{local}"


_H, _P, _SPAN_S, _TAB, _BREAK = (
    _q("text:h"),
    _q("text:p"),
    _q("text:s"),
    _q("text:tab"),
    _q("text:line-break"),
)
_LIST, _ITEM, _TABLE = _q("text:list"), _q("text:list-item"), _q("table:table")
_ROW, _CELL = _q("table:table-row"), _q("table:table-cell")
_COVERED = _q("table:covered-table-cell")
_SPREADSHEET = _q("office:spreadsheet")
_ROWS_REPEATED, _COLS_REPEATED = (
    _q("table:number-rows-repeated"),
    _q("table:number-columns-repeated"),
)
_SKIP_INLINE = frozenset({_q("text:note-citation"), _q("office:annotation")})
_SKIP_BLOCK = frozenset({_q("text:tracked-changes"), _q("office:annotation")})  # deleted text


def parse_odt(content: bytes, charset: str | None) -> tuple[str, str | None]:
    body, title = _tree(content, "ODT", "text")
    blocks = list(_text_blocks(body))
    first_heading = next((b.lstrip("# ") for b in blocks if b.startswith("#")), None)
    return "\n\n".join(blocks), title or first_heading


def parse_ods(content: bytes, charset: str | None) -> tuple[str, str | None]:
    xml, title = _unpack(content, "ODS")
    budget = _Budget("ODS")
    blocks: list[str] = []
    for name, rows in _sheets(xml):
        lines = render_rows(_sheet_rows(rows, budget), budget)
        if lines:
            blocks.append(f"# {name}\n\n" + "\n".join(lines))
    return "\n\n".join(blocks), title


def parse_odp(content: bytes, charset: str | None) -> tuple[str, str | None]:
    body, title = _tree(content, "ODP", "presentation")
    sections: list[str] = []
    first_title: str | None = None
    notes_tag = _q("presentation:notes")
    for number, page in enumerate(body.iter(_q("draw:page")), 1):
        tick()
        slide_title = ""
        blocks: list[str] = []
        notes: list[str] = []
        for child in page:
            if child.tag == notes_tag:
                notes += [b for b in _text_blocks(child) if b]
            elif child.get(_q("presentation:class")) == "title" and not slide_title:
                slide_title = " ".join(_inline(child).split())
            else:
                blocks += _text_blocks(child)
        first_title = first_title or slide_title or None
        section = [f"# {slide_title or f'Slide {number}'}", *blocks]
        if notes:
            section.append("Notes: " + "\n".join(notes))
        sections.append("\n\n".join(b for b in section if b))
    return "\n\n".join(sections), title or first_title


def _unpack(content: bytes, kind: str) -> tuple[bytes, str | None]:
    """``content.xml`` and ``dc:title``, once the manifest says nothing is encrypted."""
    archive = checked_archive(content, kind=kind)
    with zipfile.ZipFile(io.BytesIO(archive)) as unpacked:
        names = set(unpacked.namelist())
        if "META-INF/manifest.xml" in names:
            check_not_encrypted(unpacked.read("META-INF/manifest.xml"), kind)
        if "content.xml" not in names:
            raise ItemError("parse_error", f"the {kind} file has no content.xml")
        xml = unpacked.read("content.xml")
        title = None
        if "meta.xml" in names:
            found = ElementTree.fromstring(unpacked.read("meta.xml")).find(f".//{_q('dc:title')}")
            title = " ".join((found.text or "").split()) if found is not None else None
    return xml, title or None


def _tree(content: bytes, kind: str, body_tag: str) -> tuple[Any, str | None]:
    """The ``office:<body_tag>`` element of ``content.xml`` (a tree: bounded) and title."""
    xml, title = _unpack(content, kind)
    if len(xml) > MAX_TREE_XML_BYTES:
        raise too_large(
            kind,
            f"has {len(xml):,} bytes of content.xml; the limit is {MAX_TREE_XML_BYTES:,} "
            "(its tree is held in memory)",
        )
    root = ElementTree.fromstring(xml)
    body = root.find(f"{_q('office:body')}/{_q('office:' + body_tag)}")
    if body is None:
        raise ItemError(
            "parse_error",
            f"the {kind} file's content.xml has no office:{body_tag} body (is it another "
            "OpenDocument kind with a wrong extension?)",
        )
    return body, title


def check_not_encrypted(manifest: bytes, kind: str) -> None:
    """``ItemError("encrypted")`` when the manifest declares an encrypted entry."""
    root = ElementTree.fromstring(manifest)
    if root.find(f".//{_q('manifest:encryption-data')}") is not None:
        raise ItemError(
            "encrypted",
            f"the {kind} file is password-protected (its parts are encrypted) and cannot "
            "be read without the password. Remove the password at the source to index it, "
            "or exclude it in the source's configuration.",
        )


def _text_blocks(element: Any) -> Iterator[str]:
    """Paragraph-level blocks under ``element`` in document order."""
    for child in element:
        tick()
        tag = child.tag
        if tag == _H:
            level = int(child.get(_q("text:outline-level")) or 1)
            text = " ".join(_inline(child).split())
            if text:
                yield "#" * max(1, min(level, 6)) + " " + text
        elif tag == _P:
            text = _inline(child).strip()
            if text:
                yield text
        elif tag == _LIST:
            for item in child.iter(_ITEM):
                for paragraph in item.findall(_P) + item.findall(_H):
                    text = " ".join(_inline(paragraph).split())
                    if text:
                        yield f"- {text}"
        elif tag == _TABLE:
            rows = [
                " | ".join(" ".join(_inline(cell).split()) for cell in row.iter(_CELL))
                for row in child.iter(_ROW)
            ]
            text = "\n".join(r for r in rows if r.strip(" |"))
            if text:
                yield text
        elif tag not in _SKIP_BLOCK:
            yield from _text_blocks(child)


def _inline(element: Any) -> str:
    """The text of a paragraph: spans opened, ``text:s`` as spaces, tabs, line breaks."""
    parts: list[str] = [element.text or ""]
    for child in element:
        if child.tag == _SPAN_S:
            parts.append(" " * min(int(child.get(_q("text:c")) or 1), 100))
        elif child.tag == _TAB:
            parts.append("\t")
        elif child.tag == _BREAK:
            parts.append("\n")
        elif child.tag == _P or child.tag == _H:
            parts.append("\n" + _inline(child) + "\n")
        elif child.tag not in _SKIP_INLINE:
            parts.append(_inline(child))
        parts.append(child.tail or "")
    return "".join(parts)


def _repeat(element: Any, attribute: str) -> int:
    try:
        return max(1, int(element.get(attribute) or 1))
    except ValueError:
        return 1


def _sheets(xml: bytes) -> Iterator[tuple[str, Iterator[Any]]]:
    """Each sheet's name and its rows, streamed: a row is cleared once it is read, so
    memory follows one row, not the sheet. Each sheet's rows must be read in turn."""
    events = iter(ElementTree.iterparse(io.BytesIO(xml), events=("start", "end")))
    in_body = False
    for event, element in events:
        if event != "start":
            continue
        if element.tag == _SPREADSHEET:
            in_body = True
        elif element.tag == _TABLE and in_body:
            yield element.get(_q("table:name")) or "Sheet", _rows_of(events)
    if not in_body:
        raise ItemError(
            "parse_error",
            "the ODS file's content.xml has no office:spreadsheet body (is it another "
            "OpenDocument kind with a wrong extension?)",
        )


def _rows_of(events: Iterator[tuple[str, Any]]) -> Iterator[Any]:
    """The rows of the sheet whose start was just read, up to its end (nested tables'
    rows are their cells' text)."""
    depth = 0
    for event, element in events:
        if element.tag == _TABLE:
            if event == "start":
                depth += 1
            elif depth == 0:
                return
            else:
                depth -= 1
        elif event == "end" and element.tag == _ROW and depth == 0:
            yield element
            element.clear()


def _sheet_rows(rows: Iterator[Any], budget: _Budget) -> Iterator[list[str]]:
    """A sheet's rows, repeats expanded; empty rows only when a non-empty one follows."""
    empty_rows = 0
    for row in rows:
        tick()
        cells = _row_cells(row, budget)
        repeats = _repeat(row, _ROWS_REPEATED)
        if not cells:
            empty_rows += repeats
            continue
        for _ in range(empty_rows):
            yield []  # counted by the budget: padding between rows is real size
        empty_rows = 0
        for _ in range(repeats):
            yield cells


def _row_cells(row: Any, budget: _Budget) -> list[str]:
    cells: list[str] = []
    empty = 0
    for cell in row:
        if cell.tag not in (_CELL, _COVERED):
            continue
        repeats = _repeat(cell, _COLS_REPEATED)
        text = "\n".join(_inline(p) for p in cell if p.tag == _P).strip()  # no comments
        if not text:
            empty += repeats
            continue
        if len(cells) + empty + repeats > budget.max_cells_left():
            budget.take(len(cells) + empty + repeats)  # raises, naming the cap
        cells += [""] * empty + [text] * repeats
        empty = 0
    return cells
