"""OCR with Tesseract (``[parse] ocr = true``) on real generated files.

An image is drawn with Pillow (a TrueType font at a size Tesseract reads), and a
scanned PDF is that image placed on a page by reportlab with no text layer. With OCR
off, the image is ``unsupported_type`` and the PDF ``empty_document`` as before; with
it on, both are read and their words found by a search. A PDF page that has a text
layer is never OCRed. Needs the ``tesseract`` command (Debian's tesseract-ocr, which
.ci/run installs).
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from headwater import Workspace
from headwater.errors import ItemError
from headwater.pipeline.parse import ParseOptions, parse, parser_for
from workspace_helpers import filesystem_source, write_config

PHRASE = "Quarterly harbour inspection"


def make_png(text: str = PHRASE) -> bytes:
    from PIL import Image, ImageDraw, ImageFont

    image = Image.new("RGB", (1400, 200), "white")
    ImageDraw.Draw(image).text((40, 60), text, fill="black", font=ImageFont.load_default(60))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def make_scanned_pdf(png: bytes, *, with_text_page: bool = False) -> bytes:
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4, invariant=1)
    if with_text_page:
        pdf.drawString(72, 800, "A typed cover page about lighthouses.")
        pdf.drawImage(ImageReader(io.BytesIO(png)), 40, 500, width=520, height=74)
        pdf.showPage()
    pdf.drawImage(ImageReader(io.BytesIO(png)), 40, 600, width=520, height=74)
    pdf.showPage()
    pdf.save()
    return buffer.getvalue()


OCR = ParseOptions(ocr=True)


def test_images_and_scanned_pages_are_read_only_with_ocr_on() -> None:
    png = make_png()
    assert parser_for("scan.png", None) is None
    assert parser_for("scan.png", None, OCR) == "image"
    assert parser_for("scan", "image/png", OCR) == "image"
    with pytest.raises(ItemError) as off:
        parse(png, name="scan.png", media_type=None)
    assert off.value.error_class == "unsupported_type"
    image = parse(png, name="scan.png", media_type=None, options=OCR)
    assert image.parser == "image"
    assert image.text.startswith("# Text recognized by OCR")
    assert PHRASE.lower() in image.text.lower()
    scanned = make_scanned_pdf(png)
    with pytest.raises(ItemError) as empty:
        parse(scanned, name="scan.pdf", media_type=None)
    assert empty.value.error_class == "empty_document" and "ocr = true" in str(empty.value)
    pdf = parse(scanned, name="scan.pdf", media_type=None, options=OCR)
    assert pdf.text.startswith("# Page 1 (OCR)") and PHRASE.lower() in pdf.text.lower()
    two_pages = make_scanned_pdf(png, with_text_page=True)
    mixed = parse(two_pages, name="m.pdf", media_type=None, options=OCR)
    # the page with a text layer is not OCRed (its image's words are not read)
    first, second = mixed.text.split("# Page 2 (OCR)")
    assert "lighthouses" in first and "harbour" not in first.lower()
    assert PHRASE.lower() in second.lower()


def test_the_language_is_passed_to_tesseract_and_a_missing_one_is_named() -> None:
    with pytest.raises(ItemError) as missing:
        unknown = ParseOptions(ocr=True, ocr_language="xxx")
        parse(make_png(), name="scan.png", media_type=None, options=unknown)
    assert missing.value.error_class == "parse_error" and "'xxx'" in str(missing.value)
    assert ParseOptions(ocr=True, ocr_language="deu").describe()["ocr"] == [
        "ocr-1+tesseract",
        "deu",
    ]


def test_ocr_in_a_sync_finds_words_of_an_image_and_a_scanned_pdf(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    png = make_png()
    (corpus / "whiteboard.png").write_bytes(png)
    (corpus / "scan.pdf").write_bytes(make_scanned_pdf(make_png("Ferry timetable revision")))
    config = write_config(
        tmp_path,
        manifest_url=None,
        sources=filesystem_source(corpus, access="{ public = true }"),
        extra='[parse]\nocr = true\nocr_language = "eng"\n',
    )
    with Workspace.open(config) as ws:
        ws.sync()
        assert ws.failures() == []
        (image,) = ws.search("harbour inspection", mode="keyword", k=1)
        assert image["locator"].endswith("whiteboard.png")
        (scan,) = ws.search("ferry timetable", mode="keyword", k=1)
        assert scan["locator"].endswith("scan.pdf")
