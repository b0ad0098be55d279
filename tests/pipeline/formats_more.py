"""Real files of the formats added after the first slice of issue 27.

odfpy writes the OpenDocument files, the ``zipfile`` module lays out EPUB's container
(its spine, manifest and XHTML chapters as the EPUB 3 specification says), pypdf
encrypts a PDF, and RTF is written as WordPad would. Every builder returns bytes.
"""

from __future__ import annotations

import io
import zipfile
from typing import Any

ODF_MANIFEST_NS = "urn:oasis:names:tc:opendocument:xmlns:manifest:1.0"


def _save(document: Any) -> bytes:
    buffer = io.BytesIO()
    document.write(buffer)
    return buffer.getvalue()


def make_odt() -> bytes:
    from odf.opendocument import OpenDocumentText
    from odf.table import Table, TableCell, TableColumn, TableRow
    from odf.text import H, List, ListItem, P

    document = OpenDocumentText()
    document.text.addElement(H(outlinelevel=1, text="Quarterly plan"))
    document.text.addElement(P(text="Headwater reads OpenDocument text."))
    document.text.addElement(H(outlinelevel=2, text="Risks"))
    items = List()
    for text in ("Late hardware", "Budget cuts"):
        item = ListItem()
        item.addElement(P(text=text))
        items.addElement(item)
    document.text.addElement(items)
    table = Table(name="Owners")
    table.addElement(TableColumn(numbercolumnsrepeated=2))
    for row in (("Region", "Owner"), ("North", "Ada Lovelace")):
        table_row = TableRow()
        table.addElement(table_row)
        for value in row:
            cell = TableCell()
            cell.addElement(P(text=value))
            table_row.addElement(cell)
    document.text.addElement(table)
    return _save(document)


def make_ods(rows: int = 3, padded: bool = True) -> bytes:
    from odf.opendocument import OpenDocumentSpreadsheet
    from odf.table import Table, TableCell, TableRow
    from odf.text import P

    document = OpenDocumentSpreadsheet()

    def row_of(*values: object, repeated: int = 1) -> Any:
        row = TableRow(numberrowsrepeated=repeated) if repeated > 1 else TableRow()
        for value in values:
            if value is None:
                row.addElement(TableCell())
            elif isinstance(value, int):
                cell = TableCell(valuetype="float", value=value)
                cell.addElement(P(text=str(value)))
                row.addElement(cell)
            else:
                cell = TableCell(valuetype="string")
                cell.addElement(P(text=str(value)))
                row.addElement(cell)
        if padded:  # LibreOffice pads every row to the sheet's width
            row.addElement(TableCell(numbercolumnsrepeated=1020))
        return row

    sales = Table(name="Sales")
    sales.addElement(row_of("Region", "Quarter", "Revenue"))
    regions = ["North", "South", "East", "West"]
    for n in range(rows):
        sales.addElement(row_of(regions[n % 4], f"Q{n % 4 + 1}", 1000 + n))
    if padded:  # and every sheet to a million rows
        sales.addElement(row_of(None, repeated=1048000))
    document.spreadsheet.addElement(sales)
    staff = Table(name="Staff")
    staff.addElement(row_of("Name", "Role"))
    staff.addElement(row_of("Grace Hopper", "Admiral"))
    document.spreadsheet.addElement(staff)
    return _save(document)


def make_odp() -> bytes:
    from odf.draw import Frame, Page, TextBox
    from odf.opendocument import OpenDocumentPresentation
    from odf.presentation import Notes
    from odf.style import MasterPage, PageLayout
    from odf.text import P

    document = OpenDocumentPresentation()
    layout = PageLayout(name="layout")
    document.automaticstyles.addElement(layout)
    master = MasterPage(name="Default", pagelayoutname=layout)
    document.masterstyles.addElement(master)

    def frame(text: str, kind: str | None) -> Any:
        attributes = {"width": "20cm", "height": "3cm", "x": "1cm", "y": "1cm"}
        if kind:
            attributes["class"] = kind  # presentation:class
        box = Frame(**attributes)
        text_box = TextBox()
        text_box.addElement(P(text=text))
        box.addElement(text_box)
        return box

    slides = (
        ("Roadmap 2027", "Ship the ODP reader first.", "Mention the budget."),
        ("Risks", "Hiring is slow.", None),
    )
    for title, body, notes in slides:
        page = Page(masterpagename=master)
        page.addElement(frame(title, "title"))
        page.addElement(frame(body, "outline"))
        if notes:
            notes_element = Notes()
            notes_element.addElement(frame(notes, "notes"))
            page.addElement(notes_element)
        document.presentation.addElement(page)
    return _save(document)


def encrypted_odf(mimetype: str = "application/vnd.oasis.opendocument.text") -> bytes:
    """An ODF package laid out as LibreOffice writes a password-protected one: the
    manifest declares ``encryption-data`` for content.xml, whose bytes are ciphertext."""
    manifest = f"""<?xml version="1.0" encoding="UTF-8"?>
<manifest:manifest xmlns:manifest="{ODF_MANIFEST_NS}" manifest:version="1.2">
 <manifest:file-entry manifest:full-path="/" manifest:media-type="{mimetype}"/>
 <manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"
   manifest:size="3021">
  <manifest:encryption-data manifest:checksum-type="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0#sha256-1k"
    manifest:checksum="aGVhZHdhdGVy">
   <manifest:algorithm manifest:algorithm-name="http://www.w3.org/2001/04/xmlenc#aes256-cbc"
     manifest:initialisation-vector="aGVhZHdhdGVy"/>
   <manifest:key-derivation manifest:key-derivation-name="PBKDF2" manifest:key-size="32"
     manifest:iteration-count="100000" manifest:salt="aGVhZHdhdGVy"/>
  </manifest:encryption-data>
 </manifest:file-entry>
</manifest:manifest>
"""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("mimetype", mimetype, compress_type=zipfile.ZIP_STORED)
        archive.writestr("META-INF/manifest.xml", manifest, compress_type=zipfile.ZIP_DEFLATED)
        archive.writestr("content.xml", bytes(range(256)) * 12)
    return buffer.getvalue()


RTF = (
    rb"{\rtf1\ansi\ansicpg1252\deff0{\fonttbl{\f0\fswiss Helvetica;}}"
    rb"{\colortbl;\red255\green0\blue0;}"
    rb"{\info{\title Release notes}{\author Ada}}"
    rb"\f0\fs24 {\b Release notes}\par "
    rb"The caf\'e9 opens at nine.\par "
    rb"Unicode \u8364? euro and \u-3913? too.\par "
    rb"{\pict\pngblip 89504e470d0a1a0a}"
    rb"Last line.\par }"
)
"""An RTF file as WordPad writes one: font and colour tables, info, an escape, a picture."""


def make_epub(*, encrypt_chapter: bool = False) -> bytes:
    """An EPUB 3 book: container, package document (OPF) with spine, two chapters."""
    container = """<?xml version="1.0"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
 <rootfiles><rootfile full-path="OEBPS/content.opf"
   media-type="application/oebps-package+xml"/></rootfiles>
</container>"""
    opf = """<?xml version="1.0" encoding="UTF-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">
 <metadata xmlns:dc="http://purl.org/dc/elements/1.1/">
  <dc:identifier id="id">urn:uuid:1</dc:identifier>
  <dc:title>The River Guide</dc:title><dc:language>en</dc:language>
 </metadata>
 <manifest>
  <item id="c2" href="text/chapter%202.xhtml" media-type="application/xhtml+xml"/>
  <item id="c1" href="text/ch1.xhtml" media-type="application/xhtml+xml"/>
  <item id="css" href="style.css" media-type="text/css"/>
 </manifest>
 <spine><itemref idref="c1"/><itemref idref="c2"/></spine>
</package>"""

    def chapter(heading: str, body: str) -> str:
        return (
            '<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE html>\n'
            '<html xmlns="http://www.w3.org/1999/xhtml"><head><title>x</title>'
            "<style>p { color: red }</style></head>"
            f"<body><h1>{heading}</h1><p>{body}</p></body></html>"
        )

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as book:
        book.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        book.writestr("META-INF/container.xml", container)
        book.writestr("OEBPS/content.opf", opf)
        book.writestr("OEBPS/text/ch1.xhtml", chapter("Sources", "Every river has a source."))
        book.writestr("OEBPS/text/chapter 2.xhtml", chapter("Mouths", "The delta meets the sea."))
        book.writestr("OEBPS/style.css", "p { margin: 0 }")
        if encrypt_chapter:
            book.writestr(
                "META-INF/encryption.xml",
                '<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" '
                'xmlns:enc="http://www.w3.org/2001/04/xmlenc#"><enc:EncryptedData>'
                '<enc:CipherData><enc:CipherReference URI="OEBPS/text/ch1.xhtml"/>'
                "</enc:CipherData></enc:EncryptedData></encryption>",
            )
    return buffer.getvalue()


def make_pdf(pages: list[str], *, password: str | None = None) -> bytes:
    """A PDF written by reportlab, one text line a page; encrypted by pypdf's writer."""
    from pypdf import PdfWriter
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4, invariant=1)
    for text in pages:
        pdf.drawString(72, 800, text)
        pdf.showPage()
    pdf.save()
    if password is None:
        return buffer.getvalue()
    writer = PdfWriter(clone_from=io.BytesIO(buffer.getvalue()))
    writer.encrypt(user_password=password, owner_password=password + "-owner", algorithm="AES-128")
    locked = io.BytesIO()
    writer.write(locked)
    return locked.getvalue()


def ole_encrypted_office() -> bytes:
    """The head of a Compound File as Office saves a password-protected DOCX/XLSX/PPTX:
    the CFB header (magic d0cf11e0, version 3, 512-byte sectors) and a directory sector
    naming the ``EncryptionInfo`` and ``EncryptedPackage`` streams (UTF-16 names)."""
    header = bytearray(512)
    header[0:8] = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
    header[0x18:0x1A] = (0x3E).to_bytes(2, "little")  # minor version
    header[0x1A:0x1C] = (3).to_bytes(2, "little")  # major version 3
    header[0x1C:0x1E] = b"\xfe\xff"  # little-endian
    header[0x1E:0x20] = (9).to_bytes(2, "little")  # 512-byte sectors
    header[0x20:0x22] = (6).to_bytes(2, "little")  # 64-byte mini sectors
    directory = bytearray(512)
    for slot, name in enumerate(("Root Entry", "EncryptionInfo", "EncryptedPackage")):
        encoded = name.encode("utf-16-le") + b"\x00\x00"
        entry = slot * 128
        directory[entry : entry + len(encoded)] = encoded
        directory[entry + 0x40 : entry + 0x42] = len(encoded).to_bytes(2, "little")
        directory[entry + 0x42] = 5 if slot == 0 else 2  # root storage, then streams
    return bytes(header) + bytes(directory) + bytes(range(256)) * 8
