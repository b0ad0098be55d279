"""Real files of the formats added for issue 27, written by the writing side of each library.

python-pptx writes the slides, openpyxl the workbooks, the ``email`` package the message,
docutils' own syntax the reStructuredText; every builder returns bytes and the phrases a
search must find in them.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
from email.message import EmailMessage

CHANGELOG = (
    "headwater (1.2-1) unstable; urgency=medium\n\n"
    "  * Read compressed changelogs by their inner name.\n\n"
    " -- Ada Lovelace <ada@example.org>  Mon, 01 Jan 2024 10:00:00 +0000\n"
)


def compressed(method: str, data: bytes) -> bytes:
    packers = {"gz": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress}
    return packers[method](data)


RST = b"""\
=============
Install guide
=============

Headwater reads *reStructuredText* with docutils.

Requirements
============

- Python 3.11
- a working **compiler**

.. note:: Back up the state directory first.

.. include:: /etc/passwd

.. raw:: html

   <script>alert("raw")</script>

.. toctree::

   api

Example::

    headwater sync --full

See :ref:`the reference <ref>` for more.
"""


def make_xlsx(rows_per_sheet: int = 3) -> bytes:
    from openpyxl import Workbook

    workbook = Workbook()
    sales = workbook.active
    assert sales is not None
    sales.title = "Sales"
    sales.append(["Region", "Quarter", "Revenue"])
    regions = ["North", "South", "East", "West"]
    for n in range(rows_per_sheet):
        sales.append([regions[n % 4], f"Q{n % 4 + 1}", 1000 + n])
    staff = workbook.create_sheet("Staff")
    staff.append(["Name", "Role", None, "Start"])
    staff.append(["Grace Hopper", "Admiral", None, "1943-12-01"])
    staff.append([])
    staff.append(["Alan Turing", None, None, 1936.0])
    workbook.properties.title = "Company figures"
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def make_pptx() -> bytes:
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    title_slide = deck.slides.add_slide(deck.slide_layouts[0])
    title_slide.shapes.title.text = "Roadmap 2027"
    title_slide.placeholders[1].text = "Where the product goes next"
    title_slide.notes_slide.notes_text_frame.text = "Mention the hiring plan."
    bullets = deck.slides.add_slide(deck.slide_layouts[1])
    bullets.shapes.title.text = "Priorities"
    bullets.placeholders[1].text = "Ship OCR\nFaster sync"
    table = bullets.shapes.add_table(2, 2, Inches(1), Inches(4), Inches(4), Inches(1)).table
    table.cell(0, 0).text, table.cell(0, 1).text = "Team", "Owner"
    table.cell(1, 0).text, table.cell(1, 1).text = "Search", "Lin"
    blank = deck.slides.add_slide(deck.slide_layouts[6])
    box = blank.shapes.add_textbox(Inches(1), Inches(1), Inches(4), Inches(1))
    box.text_frame.text = "A slide without a title"
    buffer = io.BytesIO()
    deck.save(buffer)
    return buffer.getvalue()


def make_eml(*, html_only: bool = False) -> bytes:
    msg = EmailMessage()
    msg["From"] = "Alice Example <alice@example.org>"
    msg["To"] = "bob@example.org"
    msg["Subject"] = "Budget for Q3"
    msg["Date"] = "Tue, 01 Oct 2024 10:00:00 +0000"
    if html_only:
        msg.set_content(
            "<html><body><h1>Budget</h1><p>The travel budget is approved.</p></body></html>",
            subtype="html",
        )
    else:
        msg.set_content("The travel budget is approved.\nSee the attached sheet.")
        msg.add_alternative("<p>The <b>travel</b> budget is approved.</p>", subtype="html")
    msg.add_attachment(b"%PDF-1.4 fake", maintype="application", subtype="pdf", filename="q3.pdf")
    return msg.as_bytes()
