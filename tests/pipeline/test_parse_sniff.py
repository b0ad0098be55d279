"""A name whose suffix names no format is read by what its bytes are.

Real files of this machine's kind: an apt ``sources.list``, a bc program, GnuPG options,
groff's ``MORE.STUFF.gz``, an XML and an HTML page under odd names are read; PostScript,
a PEM certificate, an SVG image, a GIF, Latin-1 bytes and hidden files are not.
"""

from __future__ import annotations

import gzip

import pytest

from headwater.errors import ItemError
from headwater.pipeline.parse import parse

GIF = bytes.fromhex(
    "47494638396101000100800000000000ffffff21f90401000000002c00000000010001000002024401003b"
)


@pytest.mark.parametrize(
    ("name", "content", "parser", "phrase"),
    [
        (
            "apt/sources.list",
            b"deb http://deb.debian.org/debian bookworm main\n",
            "text",
            "bookworm",
        ),
        ("bc/examples/pi.b", b"scale=20\n/* the digits of pi */\n4*a(1)\n", "text", "digits of pi"),
        (
            "gnupg/options.prf",
            b"# GnuPG options\nkeyserver hkps://keys.example\n",
            "text",
            "keyserver",
        ),
        ("notes.unknownsuffix", "Grüße aus Köln\n".encode(), "text", "Grüße aus Köln"),
        (
            "manual.docbook",
            b'<?xml version="1.0"?>\n<book><title>Harbour</title><para>Tides and locks.</para></book>',
            "xml",
            "Tides and locks",
        ),
        (
            "page.shtml",
            b"<!DOCTYPE html>\n<html><head><title>Ports</title></head><body><p>Quays</p></body></html>",
            "html",
            "Quays",
        ),
    ],
)
def test_text_under_an_unknown_suffix_is_read(
    name: str, content: bytes, parser: str, phrase: str
) -> None:
    parsed = parse(content, name=name, media_type=None)
    assert parsed.parser == parser and phrase in parsed.text
    assert parse(content, name=name, media_type="application/octet-stream").parser == parser


def test_a_compressed_file_with_an_unknown_inner_suffix_is_read_by_its_bytes() -> None:
    parsed = parse(
        gzip.compress(b"More stuff about groff.\n"), name="groff/MORE.STUFF.gz", media_type=None
    )
    assert (parsed.parser, parsed.text) == ("text", "More stuff about groff.")
    with pytest.raises(ItemError, match="not a supported format"):  # PostScript, unpacked
        parse(gzip.compress(b"%!PS-Adobe-3.0\n%%Pages: 1\n"), name="doc/ref.ps.gz", media_type=None)


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("guide.ps", b"%!PS-Adobe-3.0\n%%Title: guide\nshowpage\n"),
        (
            "ca.crt",
            b"-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----\n",
        ),
        ("id.key", b"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n"),
        (
            "logo.svgz.txt.bak",
            b'<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg"><text>Hi</text></svg>',
        ),
        ("icon.svg", b'<svg xmlns="http://www.w3.org/2000/svg" width="1"/>'),
        ("dot.gif", GIF),
        ("old.wri", "Grüße".encode("latin-1") * 20),  # not UTF-8: no guess
        ("mail/.netrc", b"machine example.org login ann password hunter2\n"),  # hidden
        ("photo.bin", b"\x89PNG\r\n\x1a\n" + bytes(64)),
    ],
)
def test_no_prose_binary_and_hidden_files_stay_unsupported(name: str, content: bytes) -> None:
    with pytest.raises(ItemError) as caught:
        parse(content, name=name, media_type=None)
    assert caught.value.error_class == "unsupported_type"


def test_a_specific_media_type_is_not_second_guessed() -> None:
    with pytest.raises(ItemError, match="not a supported format"):
        parse(b"plain words", name="scan.raw", media_type="image/x-raw")
