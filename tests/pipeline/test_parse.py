"""Parsers: every supported format from real files, and every failure as an ItemError."""

from __future__ import annotations

import io
import random

import docx
import pytest
from pypdf import PdfWriter
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas

from headwater.errors import ItemError
from headwater.pipeline.parse import (
    PARSER_VERSIONS,
    SUPPORTED_EXTENSIONS,
    normalize_text,
    parse,
    parser_for,
)


def make_pdf(pages: list[str], *, title: str | None = None) -> bytes:
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4, invariant=1)
    if title:
        pdf.setTitle(title)
    for text in pages:
        y = 800
        for line in text.split("\n"):
            pdf.drawString(72, y, line)
            y -= 16
        pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def make_docx() -> bytes:
    document = docx.Document()
    document.add_paragraph("Quarterly Report", style="Title")
    document.add_heading("Revenue", level=1)
    document.add_paragraph("Revenue grew in every region.")
    document.add_heading("Details", level=2)
    document.add_paragraph("First point", style="List Bullet")
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "Region", "Growth"
    table.cell(1, 0).text, table.cell(1, 1).text = "North", "12%"
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def test_plain_text_is_normalized() -> None:
    raw = "Caf\u0065\u0301 line   \r\nnext\r\n\r\n\r\n\r\n\r\nlast\t\n".encode()
    parsed = parse(raw, name="notes.txt", media_type=None)
    assert parsed.text == "Café line\nnext\n\nlast"
    assert parsed.title is None and parsed.parser == "text"


def test_legacy_encodings_are_detected() -> None:
    western = parse("Déjà vu à Genève".encode("cp1252"), name="a.txt", media_type=None)
    assert western.text == "Déjà vu à Genève"
    russian = ("Привет мир, это проверка кодировки текста. " * 4).encode("cp1251")
    assert parse(russian, name="r.txt", media_type=None).text.startswith("Привет мир")
    declared = parse("naïve".encode("latin-1"), name="x", media_type="text/plain; charset=latin-1")
    assert declared.text == "naïve"


def test_markdown_keeps_markup_and_finds_the_title() -> None:
    source = b"# Guide\n\nSome *text*.\n\n## Part\n\nMore."
    parsed = parse(source, name="guide.md", media_type=None)
    assert parsed.text == "# Guide\n\nSome *text*.\n\n## Part\n\nMore."
    assert parsed.title == "Guide" and parsed.parser == "markdown"


def test_markdown_front_matter_title_wins_and_leaves_the_text() -> None:
    source = b'---\ntitle: "Front Title"\ndate: 2024-01-01\n---\n# Heading\n\nBody.'
    parsed = parse(source, name="post.markdown", media_type=None)
    assert parsed.title == "Front Title"
    assert parsed.text == "# Heading\n\nBody."


def test_html_main_text_with_markdown_headings() -> None:
    body = "".join(
        f"<h2>Section {i}</h2><p>{f'This paragraph explains topic {i} in detail. ' * 6}</p>"
        for i in range(3)
    )
    page = (
        "<html><head><title>Page title</title>"
        '<meta property="og:title" content="OG title"><script>var x = 1;</script></head>'
        f"<body><nav><a href='/'>Home</a></nav><article><h1>Main</h1>{body}</article>"
        "<footer>Copyright footer</footer></body></html>"
    ).encode()
    parsed = parse(page, name="page.html", media_type="text/html; charset=utf-8")
    assert parsed.title == "OG title"
    assert "## Section 1" in parsed.text
    assert "topic 2 in detail" in parsed.text
    assert "var x" not in parsed.text


def test_short_html_falls_back_to_plain_extraction() -> None:
    page = b"<html><head><title>Tiny</title><style>p{}</style></head><body><p>Hi.</p></body></html>"
    parsed = parse(page, name="tiny.htm", media_type=None)
    assert parsed.text == "Hi."
    assert parsed.title == "Tiny"


def test_pdf_pages_and_title() -> None:
    content = make_pdf(["First page text", "Second page text"], title="A PDF")
    parsed = parse(content, name="doc.pdf", media_type="application/pdf")
    assert "First page text" in parsed.text and "Second page text" in parsed.text
    assert parsed.title == "A PDF" and parsed.parser == "pdf"


def test_same_pdf_bytes_give_the_same_text() -> None:
    content = make_pdf(["Stable text"])
    assert parse(content, name="a.pdf", media_type=None) == parse(
        content, name="a.pdf", media_type=None
    )


def test_encrypted_pdf_is_an_encrypted_failure() -> None:
    writer = PdfWriter(clone_from=io.BytesIO(make_pdf(["secret"])))
    writer.encrypt(user_password="pw", owner_password="owner", algorithm="RC4-128")
    buffer = io.BytesIO()
    writer.write(buffer)
    with pytest.raises(ItemError) as caught:
        parse(buffer.getvalue(), name="locked.pdf", media_type=None)
    assert caught.value.error_class == "encrypted"
    assert caught.value.permanent
    assert "password-protected" in str(caught.value)


@pytest.mark.parametrize(
    "content",
    [b"%PDF-1.7\n1 0 obj << /Type /Catalog", b"not a pdf at all", b""],
)
def test_corrupt_pdf_is_a_parse_error(content: bytes) -> None:
    with pytest.raises(ItemError) as caught:
        parse(content, name="broken.pdf", media_type=None)
    assert caught.value.error_class == "parse_error"
    assert caught.value.permanent


def test_pdf_without_text_is_an_empty_document() -> None:
    with pytest.raises(ItemError) as caught:
        parse(make_pdf([""]), name="scan.pdf", media_type=None)
    assert caught.value.error_class == "empty_document"
    assert "a scanned PDF without a text layer?" in str(caught.value)


def test_docx_headings_lists_and_tables() -> None:
    parsed = parse(make_docx(), name="report.docx", media_type=None)
    assert parsed.title == "Quarterly Report"
    assert parsed.text.split("\n\n") == [
        "# Quarterly Report",
        "# Revenue",
        "Revenue grew in every region.",
        "## Details",
        "- First point",
        "Region | Growth\nNorth | 12%",
    ]


def test_corrupt_docx_is_a_parse_error() -> None:
    with pytest.raises(ItemError) as caught:
        parse(b"PK\x03\x04 truncated zip", name="bad.docx", media_type=None)
    assert caught.value.error_class == "parse_error"


def test_unknown_type_is_unsupported() -> None:
    with pytest.raises(ItemError) as caught:
        parse(b"\x89PNG", name="image.png", media_type="image/png")
    assert caught.value.error_class == "unsupported_type"
    assert "image.png" in str(caught.value)


@pytest.mark.parametrize("media_type", [None, "application/octet-stream", "text/x-readme"])
def test_a_file_without_an_extension_is_read_as_plain_text(media_type: str | None) -> None:
    parsed = parse(b"Read me first.\r\nThen the rest.\n", name="docs/README", media_type=media_type)
    assert (parsed.parser, parsed.text) == ("text", "Read me first.\nThen the rest.")
    # ... unless its bytes are not text, or its media type names another format
    with pytest.raises(ItemError, match="is binary, not plain text") as binary:
        parse(b"\x1f\x8b\x08\x00" + bytes(200), name="NEWS", media_type=None)
    assert binary.value.error_class == "unsupported_type"
    with pytest.raises(ItemError, match="is not a supported format"):
        parse(b"\x89PNG", name="logo", media_type="image/png")
    with pytest.raises(ItemError, match="is not a supported format"):
        parse(b"\xffWPC\x10\x00\x00\x00", name="notes.wpd", media_type=None)  # binary
    with pytest.raises(ItemError, match="is not a supported format"):
        parse(b"*.pyc", name="src/.gitignore", media_type=None)  # a hidden file


def test_empty_text_is_an_empty_document() -> None:
    with pytest.raises(ItemError) as caught:
        parse(b"  \n\n \t\n", name="blank.txt", media_type=None)
    assert caught.value.error_class == "empty_document"
    message = str(caught.value)  # a blank text file is no scanned PDF
    assert "PDF" not in message and "read again when it changes" in message


def test_media_type_wins_over_extension_unless_generic() -> None:
    assert parser_for("page.txt", "text/html") == "html"
    assert parser_for("file.bin", "application/pdf") == "pdf"
    assert parser_for("notes.md", "text/plain") == "markdown"
    assert parser_for("notes.MD", "application/octet-stream") == "markdown"
    assert parser_for("archive.zip", None) is None


def test_versions_cover_every_parser() -> None:
    assert set(SUPPORTED_EXTENSIONS.values()) == set(PARSER_VERSIONS)
    assert all(PARSER_VERSIONS.values())


def test_normalize_text_is_idempotent() -> None:
    messy = "a \r\n\r\n\r\n\r\nb\u00a0 \n\x00c"
    once = normalize_text(messy)
    assert normalize_text(once) == once == "a\n\nb\nc"


PNG_HEADER = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00"


@pytest.mark.parametrize(
    ("name", "content", "why"),
    [
        ("diagram.md", PNG_HEADER + bytes(range(256)) * 40, "NUL bytes"),
        ("notes.md", make_docx(), "NUL bytes"),  # a zip named .md
        ("data.txt", random.Random(7).randbytes(20_000), "NUL bytes"),
        ("page.html", b"<html>" + b"\x00\x01\x02" * 100, "NUL bytes"),
        ("controls.txt", bytes(range(1, 32)) * 300, "control characters"),
        ("mixed.md", (b"caf\xe9 \x01\x02 " + b"plain words " * 8) * 200, "not UTF-8"),
    ],
)
def test_binary_content_in_a_text_format_is_unsupported(
    name: str, content: bytes, why: str
) -> None:
    with pytest.raises(ItemError) as caught:
        parse(content, name=name, media_type=None)
    assert caught.value.error_class == "unsupported_type" and caught.value.permanent
    message = str(caught.value)
    assert name in message and "binary" in message and why in message
    assert f"{len(content):,} bytes" in message and "Exclude it" in message
    assert "text text" not in message  # the text parser's files are "plain text"


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("utf16.txt", "Grüße aus Köln\n".encode("utf-16")),  # NULs, but a BOM says UTF-16
        (
            "western.txt",
            "Caf\u00e9 cr\u00e8me, na\u00efve r\u00e9sum\u00e9. ".encode("cp1252") * 50,
        ),
        ("build-log.txt", b"\x1b[32mok\x1b[0m step passed\n" * 400),  # colour codes
        ("pages.txt", b"page one\n\x0cpage two\n" * 100),  # form feeds
        # valid UTF-8 with 1.6 % stray controls, the sniff limit cutting a character
        ("cut.md", b"a" + ("\u00e9" * 30 + "\x01").encode() * 300),
    ],
)
def test_text_with_unusual_bytes_is_still_text(name: str, content: bytes) -> None:
    assert parse(content, name=name, media_type=None).text.strip()


def test_utf16_without_a_bom_is_text_when_its_charset_is_declared() -> None:
    content = "Grüße aus Köln\n".encode("utf-16-le") * 10
    with pytest.raises(ItemError, match="NUL bytes"):
        parse(content, name="notes.txt", media_type=None)
    parsed = parse(content, name="notes.txt", media_type="text/plain; charset=UTF-16LE")
    assert parsed.text.startswith("Grüße aus Köln")
