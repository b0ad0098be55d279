"""OpenDocument, RTF, EPUB, encrypted files, content sniffing and the parse time budget.

Every file is real: odfpy writes the OpenDocument files, reportlab and pypdf the PDFs,
python-docx and python-pptx the Office files; EPUB and RTF are laid out as their
specifications say (``formats_more``).
"""

from __future__ import annotations

import io
from collections.abc import Callable

import pytest
from formats import make_pptx, make_xlsx
from formats_more import (
    RTF,
    encrypted_odf,
    make_epub,
    make_odp,
    make_ods,
    make_odt,
    make_pdf,
    ole_encrypted_office,
)

from headwater.errors import ItemError
from headwater.pipeline.parse import PARSER_VERSIONS, ParseOptions, parse, parser_for


def _error(content: bytes, name: str, options: ParseOptions | None = None) -> ItemError:
    with pytest.raises(ItemError) as caught:
        parse(content, name=name, media_type=None, options=options)
    assert caught.value.permanent
    return caught.value


def test_odt_headings_lists_and_tables_come_out_in_order() -> None:
    parsed = parse(make_odt(), name="plan.odt", media_type=None)
    assert parsed.parser == "odt" and PARSER_VERSIONS["odt"] == "odt-1"
    assert parsed.title == "Quarterly plan"
    text = parsed.text
    assert text.startswith("# Quarterly plan\n\nHeadwater reads OpenDocument text.")
    assert "## Risks" in text
    assert "- Late hardware" in text and "- Budget cuts" in text
    assert "Region | Owner\nNorth | Ada Lovelace" in text
    assert text.index("## Risks") < text.index("- Late hardware") < text.index("Region | Owner")


def test_ods_is_one_section_per_sheet_with_headers_beside_cells() -> None:
    parsed = parse(make_ods(), name="figures.ods", media_type=None)
    assert parsed.parser == "ods"
    assert parsed.text == (
        "# Sales\n\n"
        "Region: North; Quarter: Q1; Revenue: 1000\n"
        "Region: South; Quarter: Q2; Revenue: 1001\n"
        "Region: East; Quarter: Q3; Revenue: 1002\n\n"
        "# Staff\n\n"
        "Name: Grace Hopper; Role: Admiral"
    )


def test_a_sheet_padded_to_a_million_rows_reads_but_a_repeated_row_counts() -> None:
    from odf.opendocument import OpenDocumentSpreadsheet
    from odf.table import Table, TableCell, TableRow
    from odf.text import P

    document = OpenDocumentSpreadsheet()
    sheet = Table(name="Big")
    for values, repeated in ((("Key", "Value"), 1), (("k", "v"), 150_000)):
        row = TableRow(numberrowsrepeated=repeated)
        for value in values:
            cell = TableCell()
            cell.addElement(P(text=value))
            row.addElement(cell)
        sheet.addElement(row)
    document.spreadsheet.addElement(sheet)
    buffer = io.BytesIO()
    document.write(buffer)
    error = _error(buffer.getvalue(), "big.ods")
    assert error.error_class == "too_large"
    assert "more than 100,000 rows" in str(error) and "ODS" in str(error)


def test_odp_is_one_section_per_slide_with_titles_and_notes() -> None:
    parsed = parse(make_odp(), name="roadmap.odp", media_type=None)
    assert parsed.parser == "odp"
    assert parsed.title == "Roadmap 2027"
    assert parsed.text == (
        "# Roadmap 2027\n\nShip the ODP reader first.\n\nNotes: Mention the budget.\n\n"
        "# Risks\n\nHiring is slow."
    )


@pytest.mark.parametrize(
    ("name", "mimetype"),
    [
        ("locked.odt", "application/vnd.oasis.opendocument.text"),
        ("locked.ods", "application/vnd.oasis.opendocument.spreadsheet"),
        ("locked.odp", "application/vnd.oasis.opendocument.presentation"),
    ],
)
def test_a_password_protected_odf_file_is_encrypted(name: str, mimetype: str) -> None:
    error = _error(encrypted_odf(mimetype), name)
    assert error.error_class == "encrypted"
    assert "password-protected" in str(error) and "without the password" in str(error)


def test_rtf_text_without_tables_pictures_or_info() -> None:
    parsed = parse(RTF, name="notes.rtf", media_type=None)
    assert parsed.parser == "rtf" and parsed.title == "Release notes"
    assert "The café opens at nine." in parsed.text
    assert "€ euro" in parsed.text and "Last line." in parsed.text
    for noise in ("Helvetica", "red255", "89504e47", "Ada"):
        assert noise not in parsed.text


def test_epub_chapters_follow_the_spine_not_the_manifest() -> None:
    parsed = parse(make_epub(), name="guide.epub", media_type=None)
    assert parsed.parser == "epub" and parsed.title == "The River Guide"
    assert parsed.text == (
        "# Sources\n\nEvery river has a source.\n\n# Mouths\n\nThe delta meets the sea."
    )


def test_an_epub_with_an_encrypted_chapter_is_encrypted() -> None:
    error = _error(make_epub(encrypt_chapter=True), "locked.epub")
    assert error.error_class == "encrypted" and "DRM" in str(error)


def test_a_password_protected_pdf_is_encrypted() -> None:
    assert "Open page" in parse(make_pdf(["Open page"]), name="a.pdf", media_type=None).text
    error = _error(make_pdf(["Secret page"], password="hunter2"), "locked.pdf")
    assert error.error_class == "encrypted" and "password-protected" in str(error)


@pytest.mark.parametrize("name", ["locked.docx", "locked.xlsx", "locked.pptx", "locked"])
def test_a_password_protected_office_file_is_encrypted(name: str) -> None:
    error = _error(ole_encrypted_office(), name)
    assert error.error_class == "encrypted"
    assert "password-protected" in str(error) and "encrypted Office package" in str(error)


def test_a_name_without_a_suffix_is_text_when_its_bytes_are() -> None:
    for name in ("LICENSE", "Makefile", "CHANGES", "debian/rules"):
        parsed = parse(b"all:\n\tmake docs\n", name=name, media_type=None)
        assert parsed.parser == "text" and parsed.text == "all:\n\tmake docs"
    error = _error(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "logo")
    assert error.error_class == "unsupported_type" and "binary" in str(error)


@pytest.mark.parametrize(
    ("name", "make", "parser", "phrase"),
    [
        ("scan", lambda: make_pdf(["Sniffed page"]), "pdf", "Sniffed page"),
        ("download.bin", lambda: make_pdf(["Sniffed page"]), "pdf", "Sniffed page"),
        ("memo", lambda: RTF, "rtf", "The café opens at nine."),
        ("deck", make_pptx, "pptx", "Roadmap"),
        ("slides.docx", make_pptx, "pptx", "Roadmap"),
        ("figures.pdf", make_xlsx, "xlsx", "Region: North"),
        ("plan", make_odt, "odt", "Quarterly plan"),
        ("roadmap.odt", make_odp, "odp", "Roadmap 2027"),
        ("sheet", make_ods, "ods", "Name: Grace Hopper"),
        ("book", make_epub, "epub", "Every river has a source."),
    ],
)
def test_magic_numbers_pick_the_parser_when_the_name_does_not(
    name: str, make: Callable[[], bytes], parser: str, phrase: str
) -> None:
    parsed = parse(make(), name=name, media_type=None)
    assert parsed.parser == parser and phrase in parsed.text


def test_a_text_extension_is_never_overruled_by_content() -> None:
    error = _error(make_pptx(), "notes.md")
    assert error.error_class == "unsupported_type"
    assert parser_for("notes.odt", None) == "odt" and parser_for("book.epub", None) == "epub"


class _SteppingClock:
    """A clock that moves ``step`` seconds each time it is read."""

    def __init__(self, step: float) -> None:
        self.step = step
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return (self.reads - 1) * self.step


@pytest.mark.parametrize(
    ("name", "make"),
    [
        ("plan.odt", make_odt),
        ("figures.ods", make_ods),
        ("roadmap.odp", make_odp),
        ("guide.epub", make_epub),
        ("notes.rtf", lambda: RTF),
        ("a.pdf", lambda: make_pdf(["one", "two"])),
        ("figures.xlsx", make_xlsx),
        ("roadmap.pptx", make_pptx),
        ("rows.csv", lambda: b"a,b\n1,2\n3,4\n"),
    ],
)
def test_a_parse_past_its_time_budget_stops_as_too_large(
    name: str, make: Callable[[], bytes]
) -> None:
    content = make()
    slow = ParseOptions(time_budget_s=30, clock=_SteppingClock(1000.0))
    error = _error(content, name, slow)
    assert error.error_class == "too_large"
    assert "time budget of 30 s" in str(error)
    fast = ParseOptions(time_budget_s=30, clock=_SteppingClock(0.001))
    assert parse(content, name=name, media_type=None, options=fast).text


def test_the_budget_is_counted_along_a_document_not_per_call() -> None:
    """Fifty slides at one clock second each: a 30 s budget stops inside the deck."""
    from pptx import Presentation

    deck = Presentation()
    for number in range(50):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = f"Slide title {number}"
    buffer = io.BytesIO()
    deck.save(buffer)
    ticks = _SteppingClock(1.0)
    error = _error(buffer.getvalue(), "long.pptx", ParseOptions(time_budget_s=30, clock=ticks))
    assert error.error_class == "too_large"
    assert ticks.reads == 32  # the start, then 31 checks: stopped at the first past 30 s


def test_an_odt_whose_content_is_over_the_tree_limit_is_too_large(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from headwater.pipeline.parse import _odf

    monkeypatch.setattr(_odf, "MAX_TREE_XML_BYTES", 1000)
    error = _error(make_odt(), "plan.odt")
    assert error.error_class == "too_large"
    assert "bytes of content.xml; the limit is 1,000" in str(error)
    assert parse(make_ods(), name="figures.ods", media_type=None).text  # streamed: no limit


def test_rtf_pictures_are_cut_before_striprtf_and_the_text_is_the_same() -> None:
    from striprtf.striprtf import rtf_to_text

    from headwater.pipeline.parse._common import normalize_text
    from headwater.pipeline.parse._rtf import without_binary_groups

    picture = b"0123456789abcdef" * 131_072  # 2 MiB of hex: some 2 s in striprtf alone
    content = RTF.replace(b"89504e470d0a1a0a", picture) + rb"{\*\themedata 0a0b}"
    content = content.replace(rb"Last line.", rb"\{braces\} Last line.")
    assert len(without_binary_groups(content)) < 1000
    parsed = parse(content, name="big.rtf", media_type=None)
    assert parsed.text == normalize_text(rtf_to_text(content.decode("latin-1")))
    assert "The café opens at nine." in parsed.text and "{braces} Last line." in parsed.text
    escaped = rb"{\rtf1 a \{\pict not a group\} b}"  # an escaped brace opens no group
    assert without_binary_groups(escaped) == escaped


def test_odf_comments_and_deleted_text_stay_out() -> None:
    from odf.namespaces import XMLNS
    from odf.office import Annotation
    from odf.opendocument import OpenDocumentSpreadsheet, OpenDocumentText
    from odf.table import Table, TableCell, TableRow
    from odf.text import ChangedRegion, Deletion, P, TrackedChanges

    document = OpenDocumentText()
    changes = TrackedChanges()
    region = ChangedRegion(qattributes={(XMLNS, "id"): "c1"})
    deletion = Deletion()
    deletion.addElement(P(text="Removed sentence about layoffs."))
    region.addElement(deletion)
    changes.addElement(region)
    document.text.addElement(changes)
    paragraph = P(text="Kept sentence.")
    comment = Annotation()
    comment.addElement(P(text="Reviewer comment."))
    paragraph.addElement(comment)
    document.text.addElement(paragraph)
    text = parse(_written(document), name="draft.odt", media_type=None).text
    assert text == "Kept sentence."

    sheet_document = OpenDocumentSpreadsheet()
    sheet = Table(name="S")
    for values in (("Name",), ("Ada",)):
        row = TableRow()
        cell = TableCell()
        cell.addElement(P(text=values[0]))
        note = Annotation()
        note.addElement(P(text="Cell comment."))
        cell.addElement(note)
        row.addElement(cell)
        sheet.addElement(row)
    sheet_document.spreadsheet.addElement(sheet)
    assert parse(_written(sheet_document), name="s.ods", media_type=None).text == (
        "# S\n\nName: Ada"
    )


def _written(document: object) -> bytes:
    buffer = io.BytesIO()
    document.write(buffer)  # type: ignore[attr-defined]
    return buffer.getvalue()
