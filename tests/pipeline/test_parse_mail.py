"""A message's attachments: parsed as their own formats, as sections named by file name.

The ``email`` package writes the messages; openpyxl, python-pptx and odfpy write the
attached files.
"""

from __future__ import annotations

from email.message import EmailMessage

from formats import make_pptx, make_xlsx
from formats_more import make_odt

from headwater.pipeline.parse import PARSER_VERSIONS, parse
from headwater.pipeline.parse._attachments import MAX_ATTACHMENTS

XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def _message(subject: str, body: str) -> EmailMessage:
    msg = EmailMessage()
    msg["From"] = "carol@example.org"
    msg["To"] = "team@example.org"
    msg["Subject"] = subject
    msg.set_content(body)
    return msg


def test_attachments_of_known_formats_become_sections_named_by_file_name() -> None:
    msg = _message("Q3 pack", "The Q3 pack is attached.")
    msg.add_attachment(make_xlsx(), maintype="application", subtype=XLSX.split("/")[1],
                       filename="figures.xlsx")  # fmt: skip
    msg.add_attachment(make_pptx(), maintype="application", subtype="octet-stream",
                       filename="roadmap.pptx")  # fmt: skip
    msg.add_attachment(make_odt(), maintype="application", subtype="octet-stream",
                       filename="plan.odt")  # fmt: skip
    msg.add_attachment(b"\x89PNG\r\n\x1a\n" + bytes(64), maintype="image", subtype="png",
                       filename="logo.png")  # fmt: skip
    msg.add_attachment(b"%PDF-1.7 cut short", maintype="application", subtype="pdf",
                       filename="broken.pdf")  # fmt: skip
    parsed = parse(msg.as_bytes(), name="pack.eml", media_type=None)
    assert PARSER_VERSIONS["eml"] == "eml-2"
    assert parsed.title == "Q3 pack" and dict(parsed.metadata)["subject"] == "Q3 pack"
    text = parsed.text
    assert "The Q3 pack is attached." in text
    assert "Attachments: figures.xlsx, roadmap.pptx, plan.odt, logo.png, broken.pdf" in text
    sections = text.split("# Attachment: ")[1:]
    assert [s.split("\n", 1)[0] for s in sections] == [
        "figures.xlsx", "roadmap.pptx", "plan.odt", "broken.pdf",  # the PNG is listed only
    ]  # fmt: skip
    assert "Region: North; Quarter: Q1; Revenue: 1000" in sections[0]
    assert "# Roadmap" in sections[1]
    assert "Ada Lovelace" in sections[2]
    assert sections[3].startswith("broken.pdf\n\nNot read (parse_error): the pdf parser")


def test_an_attached_message_is_read_but_its_own_attachments_only_listed() -> None:
    inner = _message("Original request", "Please send the figures.")
    inner.add_attachment(make_xlsx(), maintype="application", subtype="octet-stream",
                         filename="inner.xlsx")  # fmt: skip
    outer = _message("Fwd: Original request", "See below.")
    outer.add_attachment(inner)
    parsed = parse(outer.as_bytes(), name="fwd.eml", media_type=None)
    text = parsed.text
    assert text.split("\n\n")[1] == "See below."  # the inner body is no outer body
    assert "# Attachment: Original request.eml" in text
    assert "Please send the figures." in text
    assert "Attachments: inner.xlsx" in text
    assert "Region: North" not in text  # one level: the inner workbook is not opened


def test_past_the_attachment_limit_the_rest_are_noted_not_read() -> None:
    msg = _message("Many notes", "Lots of notes.")
    for number in range(MAX_ATTACHMENTS + 3):
        msg.add_attachment(f"Note number {number} body.".encode(), maintype="text",
                           subtype="plain", filename=f"note{number}.txt")  # fmt: skip
    text = parse(msg.as_bytes(), name="many.eml", media_type=None).text
    assert f"Note number {MAX_ATTACHMENTS - 1} body." in text
    assert f"Note number {MAX_ATTACHMENTS} body." not in text
    assert text.count("Not read: past the limit of 20 attachments") == 3
