"""The formats of issue 27: compressed files, markup, data, tables, slides and mail.

Every file is real (written by the library of its format, or by the stdlib compressors)
and every assertion names a phrase that must come out, where it must sit, or the failure
class a bad file must give.
"""

from __future__ import annotations

import gzip
import json
import tracemalloc
import zlib

import pytest
from formats import CHANGELOG, RST, compressed, make_eml, make_pptx, make_xlsx

from headwater.errors import ItemError
from headwater.pipeline.parse import PARSER_VERSIONS, ParseOptions, parse, parser_for
from headwater.pipeline.parse import _table as table_module
from headwater.pipeline.parse._compressed import decompress


@pytest.mark.parametrize("method", ["gz", "bz2", "xz"])
def test_a_compressed_file_is_read_as_its_inner_name(method: str) -> None:
    readme = parse(compressed(method, b"Read me.\n"), name=f"doc/README.{method}", media_type=None)
    assert (readme.parser, readme.text) == ("text", "Read me.")
    log = parse(
        compressed(method, CHANGELOG.encode()), name=f"changelog.Debian.{method}", media_type=None
    )
    assert "Read compressed changelogs by their inner name." in log.text
    page = compressed(
        method, b"<html><head><title>Guide</title></head><body><p>Hi.</p></body></html>"
    )
    assert (
        parse(page, name=f"guide.html.{method}", media_type="application/octet-stream").title
        == "Guide"
    )


def test_the_media_type_of_a_compressed_file_is_taken_as_its_inside() -> None:
    # S3 guesses with mimetypes: 'notes.txt.gz' is text/plain, 'guide.html.gz' text/html
    notes = parse(gzip.compress(b"Plain notes."), name="notes.txt.gz", media_type="text/plain")
    assert (notes.parser, notes.text) == ("text", "Plain notes.")
    page = b"<html><head><title>Guide</title></head><body><p>Hi.</p></body></html>"
    packed = parse(gzip.compress(page), name="guide.html.gz", media_type="text/html")
    assert (packed.parser, packed.title) == ("html", "Guide")
    # bytes a client already unpacked (Content-Encoding) are read as the media type says
    assert parse(page, name="guide.html.gz", media_type="text/html").title == "Guide"


def test_a_gzip_file_of_many_members_is_read_whole() -> None:
    content = gzip.compress(b"first part, ") + gzip.compress(b"second part") + bytes(512)
    assert parse(content, name="notes.txt.gz", media_type="application/gzip").text == (
        "first part, second part"
    )


@pytest.mark.parametrize("method", ["gz", "bz2", "xz"])
def test_a_corrupt_or_truncated_stream_is_a_parse_error(method: str) -> None:
    whole = compressed(method, CHANGELOG.encode() * 50)
    for content in (whole[: len(whole) // 2], whole[:12], b"\x00not compressed at all"):
        with pytest.raises(ItemError) as caught:
            parse(content, name=f"README.{method}", media_type=None)
        assert caught.value.error_class == "parse_error", content[:20]
        assert f"README.{method}" in str(caught.value) or "stream" in str(caught.value)


def test_a_compression_bomb_is_too_large_with_memory_bounded() -> None:
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = bytes(1024 * 1024)
    bomb = b"".join(packer.compress(block) for _ in range(300)) + packer.flush()  # 300 MiB
    tracemalloc.start()
    try:
        with pytest.raises(ItemError) as caught:
            parse(bomb, name="README.gz", media_type=None)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert caught.value.error_class == "too_large"
    assert "200:1" in str(caught.value) and "compression bomb" in str(caught.value)
    # never more than the cap (200 x the packed size here) held, never the 300 MiB
    assert peak < 200 * len(bomb) + 8 * 1024 * 1024 < 100 * 1024 * 1024


def test_the_unpacked_cap_is_the_zip_limit() -> None:
    from headwater.pipeline.parse._zip import ZipLimits

    limits = ZipLimits(max_unpacked_bytes=1000, ratio_floor_bytes=10**9)
    assert decompress(gzip.compress(b"a" * 1000), "gzip", limits) == b"a" * 1000
    with pytest.raises(ItemError, match="unpacks past 1,000 bytes"):
        decompress(gzip.compress(b"a" * 1001), "gzip", limits)


def test_compressed_twice_and_compressed_archives_are_refused_by_name() -> None:
    with pytest.raises(ItemError, match="compressed twice") as twice:
        parse(gzip.compress(gzip.compress(b"x")), name="a.txt.gz.gz", media_type=None)
    assert twice.value.error_class == "unsupported_type"
    with pytest.raises(ItemError, match=r"'bundle.tar.gz', unpacked: 'bundle.tar'") as tar:
        parse(gzip.compress(b"ustar" + bytes(600)), name="bundle.tar.gz", media_type=None)
    assert tar.value.error_class == "unsupported_type"


def test_rst_is_plain_text_with_markdown_headings_and_nothing_included() -> None:
    parsed = parse(RST, name="install.rst", media_type=None)
    assert parsed.parser == "rst" and parsed.title == "Install guide"
    blocks = parsed.text.split("\n\n")
    assert blocks[:3] == [
        "# Install guide",
        "Headwater reads reStructuredText with docutils.",
        "## Requirements",
    ]
    assert "- Python 3.11" in blocks and "- a working compiler" in blocks
    assert "Back up the state directory first." in parsed.text
    assert "headwater sync --full" in blocks
    assert "See the reference for more." in parsed.text
    assert "root:" not in parsed.text and "alert" not in parsed.text and "api" not in blocks


def test_asciidoc_and_org_headings_become_sections() -> None:
    adoc = b"= User Guide\n\nIntro.\n\n== Setup\n\nRun it.\n\n----\n== not a heading\n----\n"
    parsed = parse(adoc, name="guide.adoc", media_type=None)
    assert parsed.title == "User Guide"
    assert parsed.text.startswith("# User Guide\n\nIntro.\n\n## Setup\n\nRun it.")
    assert "== not a heading" in parsed.text
    org = b"#+TITLE: Meeting notes\n* Agenda\n** Budget\nApproved.\n"
    parsed = parse(org, name="notes.org", media_type=None)
    assert parsed.title == "Meeting notes" and "# Agenda\n## Budget\nApproved." in parsed.text


def test_json_and_jsonl_are_indented_text() -> None:
    parsed = parse(b'{"name":"headwater","tags":["sync","search"]}', name="p.json", media_type=None)
    assert parsed.text == json.dumps({"name": "headwater", "tags": ["sync", "search"]}, indent=2)
    lines = parse(
        b'{"id": 1, "msg": "first"}\n\n{"id": 2, "msg": "second"}\n',
        name="l.jsonl",
        media_type=None,
    )
    assert lines.text.split("\n\n") == [
        '{\n  "id": 1,\n  "msg": "first"\n}',
        '{\n  "id": 2,\n  "msg": "second"\n}',
    ]
    with pytest.raises(ItemError, match="line 2 is not valid JSON") as bad:
        parse(b'{"id": 1}\n{"id": \n', name="l.ndjson", media_type=None)
    assert bad.value.error_class == "parse_error"
    with pytest.raises(ItemError, match="not valid JSON"):
        parse(b'{"a": ', name="p.json", media_type=None)


def test_yaml_is_read_as_text_without_expanding_aliases() -> None:
    bomb = b'a: &a ["x","x"]\nb: &b [*a,*a]\nc: &c [*b,*b]\nd: [*c,*c]\n'
    parsed = parse(bomb, name="values.yaml", media_type=None)
    assert parsed.parser == "yaml" and parsed.text == bomb.decode().strip()


def test_xml_text_in_document_order_with_entities_never_expanded() -> None:
    xml = b'<?xml version="1.0"?><book><title>Manual</title><p>one <b>two</b> three</p></book>'
    parsed = parse(xml, name="book.xml", media_type=None)
    assert (parsed.title, parsed.text) == ("Manual", "Manual\none\ntwo\nthree")
    laughs = (
        b'<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa">'
        b'<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]><l>Laughs &b; &amp; &#233;</l>'
    )
    external = (
        b'<?xml version="1.0"?><!DOCTYPE l [<!ENTITY e SYSTEM "file:///etc/passwd">]><l>&e;</l>'
    )
    # read without a parser: the references stay as written, nothing is expanded
    assert parse(laughs, name="laughs.xml", media_type=None).text == "Laughs &b; & é"
    assert parse(external, name="evil.xml", media_type=None).text == "&e;"


def test_source_code_by_extension_is_text() -> None:
    for name in ("setup.py", "main.go", "lib.rs", "query.sql", "site.css", "tox.ini"):
        assert parser_for(name, None) == "code", name
    parsed = parse(b"def hello():\n    return 'world'\n", name="hello.py", media_type="text/plain")
    assert parsed.parser == "code" and "return 'world'" in parsed.text
    with pytest.raises(ItemError, match="is binary, not code text"):
        parse(bytes(range(256)) * 4, name="blob.c", media_type=None)


def test_csv_and_tsv_rows_carry_their_headers() -> None:
    content = b"Region;Quarter;Revenue\nNorth;Q1;1000\n\nSouth;;1200\nEast;Q3;900;extra\n"
    parsed = parse(content, name="sales.csv", media_type="text/plain")
    assert parsed.parser == "csv"
    assert parsed.text.split("\n") == [
        "Region: North; Quarter: Q1; Revenue: 1000",
        "Region: South; Revenue: 1200",
        "Region: East; Quarter: Q3; Revenue: 900; column 4: extra",
    ]
    tsv = parse(b"Name\tRole\nGrace Hopper\tAdmiral\n", name="staff.tsv", media_type=None)
    assert tsv.text == "Name: Grace Hopper; Role: Admiral"
    quoted = parse(b'a,b\n"x, y","line\nbreak"\n', name="q.csv", media_type=None)
    assert quoted.text == "a: x, y; b: line break"


def test_xlsx_one_section_per_sheet_with_header_value_rows() -> None:
    parsed = parse(make_xlsx(), name="figures.xlsx", media_type=None)
    assert parsed.parser == "xlsx" and parsed.title == "Company figures"
    assert parsed.text.split("\n\n") == [
        "# Sales",
        "Region: North; Quarter: Q1; Revenue: 1000\n"
        "Region: South; Quarter: Q2; Revenue: 1001\n"
        "Region: East; Quarter: Q3; Revenue: 1002",
        "# Staff",
        "Name: Grace Hopper; Role: Admiral; Start: 1943-12-01\nName: Alan Turing; Start: 1936",
    ]
    assert parser_for("macros.xlsm", None) == "xlsx"


def test_a_table_over_the_rows_cap_is_too_large_naming_the_cap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(table_module, "MAX_ROWS", 5)
    with pytest.raises(ItemError, match="more than 5 rows, the cap") as csv_cap:
        parse(b"h\n" + b"v\n" * 5, name="big.csv", media_type=None)
    assert csv_cap.value.error_class == "too_large"
    assert parse(b"h\n" + b"v\n" * 4, name="ok.csv", media_type=None).text.count("h: v") == 4
    with pytest.raises(ItemError, match="more than 5 rows") as xlsx_cap:
        parse(make_xlsx(rows_per_sheet=5), name="big.xlsx", media_type=None)
    assert xlsx_cap.value.error_class == "too_large"


def test_pptx_one_section_per_slide_with_notes() -> None:
    parsed = parse(make_pptx(), name="roadmap.pptx", media_type=None)
    assert parsed.parser == "pptx" and parsed.title == "Roadmap 2027"
    assert parsed.text.split("\n\n") == [
        "# Roadmap 2027",
        "Where the product goes next",
        "Notes: Mention the hiring plan.",
        "# Priorities",
        "Ship OCR\nFaster sync",
        "Team | Owner\nSearch | Lin",
        "# Slide 3",
        "A slide without a title",
    ]


def test_eml_headers_are_metadata_and_text_and_attachments_are_named_and_read() -> None:
    parsed = parse(make_eml(), name="mail/budget.eml", media_type=None)
    assert parsed.parser == "eml" and parsed.title == "Budget for Q3"
    assert dict(parsed.metadata) == {
        "from": "Alice Example <alice@example.org>",
        "to": "bob@example.org",
        "subject": "Budget for Q3",
        "date": "Tue, 01 Oct 2024 10:00:00 +0000",
    }
    assert parsed.text.split("\n\n") == [
        "From: Alice Example <alice@example.org>\nTo: bob@example.org\n"
        "Subject: Budget for Q3\nDate: Tue, 01 Oct 2024 10:00:00 +0000",
        "The travel budget is approved.\nSee the attached sheet.",
        "Attachments: q3.pdf",
        "# Attachment: q3.pdf",  # a fake PDF: noted, and the message is read all the same
        "Not read (parse_error): the pdf parser could not read this file: Stream has ended "
        "unexpectedly",
    ]
    html = parse(make_eml(html_only=True), name="m.eml", media_type="message/rfc822")
    assert "The travel budget is approved." in html.text and "<p>" not in html.text


def test_parse_options_name_more_text_and_media_types() -> None:
    options = ParseOptions(text_extensions=frozenset({".site"}), media_types={".tpl": "text/html"})
    latin = "listen 80; # Grüße".encode("latin-1")  # not UTF-8: its bytes do not say text
    with pytest.raises(ItemError, match=r"\[parse\] text_extensions"):
        parse(latin, name="nginx.site", media_type=None)
    named = parse(latin, name="nginx.site", media_type=None, options=options)
    assert (named.parser, named.text) == ("text", "listen 80; # Grüße")
    page = b"<html><head><title>Tpl</title></head><body><p>Hello.</p></body></html>"
    assert parse(page, name="base.tpl", media_type=None, options=options).title == "Tpl"
    assert parser_for("site.site.gz", None, options) == "compressed"
    inner = parse(gzip.compress(b"x = 1"), name="site.site.gz", media_type=None, options=options)
    assert inner.parser == "text"
    latin = ParseOptions(media_types={".txt": "text/plain; charset=latin-1"})
    assert (
        parse("naïve".encode("latin-1"), name="a.txt", media_type=None, options=latin).text
        == "naïve"
    )
    zipped = ParseOptions(media_types={".z1": "application/gzip"})
    rotated = parse(gzip.compress(b"rotated log"), name="app.z1", media_type=None, options=zipped)
    assert (rotated.parser, rotated.text) == ("text", "rotated log")
    with pytest.raises(ItemError, match="compressed twice"):
        parse(gzip.compress(gzip.compress(b"x")), name="a.z1.z1", media_type=None, options=zipped)
    assert ParseOptions().describe() == {}
    assert options.describe() == {
        "text_extensions": [".site"],
        "media_types": {".tpl": "text/html"},
    }


def test_documentation_names_with_a_meaningless_suffix_are_text() -> None:
    for name in ("README.Debian", "changelog.Debian", "NEWS.source", "copyright"):
        assert (
            parse(b"Some notes.", name=f"usr/share/doc/pkg/{name}", media_type=None).parser
            == "text"
        )
    with pytest.raises(ItemError, match="not a supported format"):
        parse(b"%!PS-Adobe-3.0\n", name="report.Debian", media_type=None)  # no prose


def test_every_new_parser_has_a_version() -> None:
    for name in ("compressed", "rst", "asciidoc", "org", "json", "jsonl", "yaml", "xml"):
        assert PARSER_VERSIONS[name]
    for name in ("code", "csv", "tsv", "xlsx", "pptx", "eml"):
        assert PARSER_VERSIONS[name]
