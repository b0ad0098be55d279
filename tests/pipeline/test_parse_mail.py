"""A message's attachments: parsed as their own formats, as sections named by file name.

The ``email`` package writes the e-mails, ``cfb.make_msg`` the Outlook messages (as
[MS-OXMSG] lays them out); openpyxl, python-pptx and odfpy write the attached files.
"""

from __future__ import annotations

from email.message import EmailMessage

import pytest
from cfb import sample_msg, write_cfb
from formats import make_pptx, make_xlsx
from formats_more import make_odt

from headwater.errors import ItemError
from headwater.pipeline.parse import PARSED_METADATA_KEYS, PARSER_VERSIONS, parse
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


def test_msg_headers_are_metadata_like_eml_and_the_body_is_text() -> None:
    parsed = parse(sample_msg(), name="mail/budget.msg", media_type=None)
    assert parsed.parser == "msg" and PARSER_VERSIONS["msg"] == "msg-1+olefile"
    assert parsed.title == "Budget for Q3"
    assert dict(parsed.metadata) == {
        "from": "Alice Example <alice@example.org>",
        "to": "Bob Example",
        "cc": "Carol Example",
        "subject": "Budget for Q3",
        "date": "Tue, 01 Oct 2024 10:00:00 +0000",
    }
    assert set(parsed.metadata) <= PARSED_METADATA_KEYS
    assert parsed.text.split("\n\n") == [
        "From: Alice Example <alice@example.org>\nTo: Bob Example\nCc: Carol Example\n"
        "Subject: Budget for Q3\nDate: Tue, 01 Oct 2024 10:00:00 +0000",
        "The travel budget is approved.\nSee the attached sheet.",
    ]


def test_msg_attachments_are_sections_like_an_emails() -> None:
    content = sample_msg(
        attachments=(("figures.xlsx", make_xlsx()), ("broken.docx", b"PK\x03\x04 cut"))
    )
    text = parse(content, name="budget.msg", media_type="application/vnd.ms-outlook").text
    assert "Attachments: figures.xlsx, broken.docx" in text
    figures = text.split("# Attachment: figures.xlsx\n\n")[1]
    assert figures.startswith("# Sales\n\nRegion: North; Quarter: Q1; Revenue: 1000")
    assert "# Attachment: broken.docx\n\nNot read (parse_error):" in text


def test_a_compound_file_that_is_no_message_is_a_parse_error() -> None:
    with pytest.raises(ItemError) as caught:
        parse(write_cfb({"WordDocument": b"x" * 100}), name="old.msg", media_type=None)
    assert caught.value.error_class == "parse_error"
    with pytest.raises(ItemError) as short:  # a short bytes object is never taken as a path
        parse(b"/etc/passwd", name="x.msg", media_type=None)
    assert short.value.error_class == "parse_error"
