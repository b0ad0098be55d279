"""Tables: CSV/TSV (stdlib ``csv``) and XLSX/XLSM (openpyxl, read-only), row by row.

A row is rendered with its header beside each cell, ``Region: North; Growth: 12%``, so a
search for "Region: North" finds the row and a chunk cut anywhere keeps each cell's
meaning. The first non-empty row of a table is its header (an empty header cell becomes
``column N``); empty cells are left out, empty rows skipped. A workbook is one section
per sheet (``# Sheet name``); its title is the workbook's core property ``title``.

Huge tables are bounded: past ``MAX_ROWS`` rows (all sheets together, empty rows
included) or ``MAX_CELLS`` cells the file is ``too_large`` with the cap named, and
reading stops there. An XLSX is
unpacked under the zip limits (``_zip.checked_archive``) before openpyxl opens it, and
the values are the ones the file cached (``data_only``): formulas are never evaluated.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import warnings
from collections.abc import Iterable, Iterator
from typing import Any, Final

from headwater.errors import ItemError
from headwater.pipeline.parse._common import decode_text, tick
from headwater.pipeline.parse._zip import checked_archive

CSV_VERSION = "csv-1"
XLSX_VERSION = "xlsx-1+openpyxl"

MAX_ROWS: Final = 100_000
MAX_CELLS: Final = 2_000_000
_SNIFF_CHARS = 16_384


class _Budget:
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.rows = 0
        self.cells = 0

    def max_cells_left(self) -> int:
        """How many more cells fit under ``MAX_CELLS``."""
        return MAX_CELLS - self.cells

    def take(self, cells: int) -> None:
        tick()
        self.rows += 1
        self.cells += cells
        if self.rows > MAX_ROWS or self.cells > MAX_CELLS:
            cap = f"{MAX_ROWS:,} rows" if self.rows > MAX_ROWS else f"{MAX_CELLS:,} cells"
            raise ItemError(
                "too_large",
                f"the {self.kind} file has more than {cap}, the cap on one table document "
                f"(stopped at row {self.rows:,}). Split it, or exclude it in the source's "
                "configuration.",
            )


def render_rows(rows: Iterable[list[str]], budget: _Budget) -> list[str]:
    """``header: value; header: value`` lines; the first non-empty row is the header."""
    header: list[str] | None = None
    lines: list[str] = []
    for raw in rows:
        budget.take(len(raw))  # empty rows too: a sheet's declared size can be padded out
        cells = [" ".join(cell.split()) for cell in raw]
        if not any(cells):
            continue
        if header is None:
            header = [cell or f"column {n}" for n, cell in enumerate(cells, 1)]
            continue
        pairs = [
            f"{header[n] if n < len(header) else f'column {n + 1}'}: {cell}"
            for n, cell in enumerate(cells)
            if cell
        ]
        lines.append("; ".join(pairs))
    if header is not None and not lines:  # a header alone is still the table's text
        lines.append("; ".join(header))
    return lines


def parse_csv(content: bytes, charset: str | None) -> tuple[str, str | None]:
    """A CSV table's text, and no title."""
    return _delimited(content, charset, None), None


def parse_tsv(content: bytes, charset: str | None) -> tuple[str, str | None]:
    """A TSV table's text, and no title."""
    return _delimited(content, charset, "\t"), None


def _delimited(content: bytes, charset: str | None, delimiter: str | None) -> str:
    text = decode_text(content, charset)
    if delimiter is None:
        try:
            delimiter = csv.Sniffer().sniff(text[:_SNIFF_CHARS], delimiters=",;\t|").delimiter
        except csv.Error:  # ragged rows: the delimiter the header line has most of
            head = next((line for line in text.splitlines() if line.strip()), "")
            delimiter = max(",;\t|", key=head.count)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    return "\n".join(render_rows(reader, _Budget("CSV")))


def parse_xlsx(content: bytes, charset: str | None) -> tuple[str, str | None]:
    """An XLSX workbook's text and title."""
    from openpyxl import load_workbook

    with warnings.catch_warnings():  # "no default style", unknown extensions: not ours to say
        warnings.simplefilter("ignore")
        workbook: Any = load_workbook(
            io.BytesIO(checked_archive(content, kind="XLSX")),
            read_only=True,
            data_only=True,
            keep_links=False,
        )
    try:
        budget = _Budget("XLSX")
        blocks: list[str] = []
        for sheet in workbook.worksheets:
            lines = render_rows(_sheet_rows(sheet), budget)
            if lines:
                blocks.append(f"# {sheet.title}\n\n" + "\n".join(lines))
        title = str(workbook.properties.title or "").strip() or None
    finally:
        workbook.close()
    return "\n\n".join(blocks), title


def _sheet_rows(sheet: Any) -> Iterator[list[str]]:
    for row in sheet.iter_rows(values_only=True):
        yield [_cell_text(value) for value in row]


def _cell_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ").removesuffix(" 00:00:00")
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    return str(value)
