"""Bad input for every parser: truncated and byte-flipped real files.

Every format Headwater reads is here (a test checks that none is missing): text,
Markdown, HTML, DOCX, PDF, the office, mail and markup formats of issue 27, a name
without an extension, a suffix read by its bytes, images through OCR, and the
containers (zip, tar.gz, mbox), whose damaged bytes are split into members and each
member parsed as a sync does.

Each case is a real file of its format cut at a random offset or with random bytes
flipped (seeded, so a failure replays). ``parse`` must return a document or raise an
``ItemError`` (a failure record); any other exception is a crash of the sync run, and
the test's timeout catches a hang.
"""

from __future__ import annotations

import io
import mailbox
import random
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from cfb import sample_msg
from formats import CHANGELOG, RST, compressed, make_eml, make_pptx, make_xlsx
from formats_more import RTF, make_epub, make_odp, make_ods, make_odt, make_pdf

from headwater.errors import ItemError
from headwater.pipeline.parse import (
    SUPPORTED_EXTENSIONS,
    ContainerLimits,
    Member,
    ParseOptions,
    members,
    parse,
)

SAMPLES: dict[str, Callable[[], bytes]] = {
    "README.gz": lambda: compressed("gz", CHANGELOG.encode() * 20),
    "README.bz2": lambda: compressed("bz2", CHANGELOG.encode() * 20),
    "README.xz": lambda: compressed("xz", CHANGELOG.encode() * 20),
    "guide.rst": lambda: RST,
    "guide.adoc": lambda: b"= Guide\n\n== Part\n\n----\ncode\n----\n\ntext *b* _i_\n" * 10,
    "notes.org": lambda: b"#+TITLE: T\n* One\n** Two\n#+BEGIN_SRC sh\nls\n#+END_SRC\n" * 10,
    "data.json": lambda: b'{"a": [1, 2.5, {"b": "c\\u00e9", "d": null}], "e": true}' * 1,
    "rows.jsonl": lambda: b'{"id": 1, "v": "x"}\n{"id": 2, "v": [1, 2]}\n' * 10,
    "values.yaml": lambda: b"a: &a [1, 2]\nb: *a\nc: {d: e}\n" * 10,
    "book.xml": lambda: b'<?xml version="1.0"?><b><title>T</title><p>x <i>y</i> z</p></b>' * 1,
    "docbook.xml": lambda: (
        b'<?xml version="1.0"?>\n<!DOCTYPE book [<!ENTITY product "Headwater">]>'
        b"<book><title>&product; guide</title><para>Use &product; &amp; more.</para></book>"
    ),
    "main.py": lambda: b"def main():\n    return 'ok'\n" * 20,
    "sales.csv": lambda: b'Region,Quarter,Revenue\nNorth,Q1,"1,000"\nSouth,Q2,900\n' * 10,
    "staff.tsv": lambda: b"Name\tRole\nGrace\tAdmiral\n" * 10,
    "figures.xlsx": make_xlsx,
    "roadmap.pptx": make_pptx,
    "budget.eml": make_eml,
    "plan.odt": make_odt,
    "figures.ods": make_ods,
    "roadmap.odp": make_odp,
    "notes.rtf": lambda: RTF * 1,
    "guide.epub": make_epub,
    "report.pdf": lambda: make_pdf(["First page of the report", "Second page"]),
    "budget.msg": lambda: sample_msg(attachments=(("figures.xlsx", make_xlsx()),)),
    "LICENSE": lambda: b"Permission is hereby granted, free of charge.\n" * 20,
    "sources.list": lambda: b"deb http://deb.debian.org/debian bookworm main\n" * 20,
    "notes.txt": lambda: "Café notes, line one.\r\nLine two.\n".encode() * 20,
    "guide.md": lambda: b"---\ntitle: Guide\n---\n# Guide\n\n```\ncode\n```\n\n- item\n" * 10,
    "page.html": lambda: (
        b"<!DOCTYPE html><html><head><title>Page</title><script>x()</script></head>"
        b"<body><nav>menu</nav><main><h1>Head</h1><p>Body &amp; more</p></main></body></html>"
    ),
    "report.docx": lambda: make_docx(),
}

ALIASES = {".text", ".log", ".markdown", ".htm", ".xhtml", ".yml", ".rest", ".asciidoc"}
ALIASES |= {".ndjson", ".tab", ".xlsm"}
"""Extensions read by the same parser as a sample's, with nothing of their own."""


def make_docx() -> bytes:
    import docx

    document = docx.Document()
    document.add_heading("Revenue", level=1)
    document.add_paragraph("Revenue grew in every region.")
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(1, 0).text = "Region", "North"
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def variants(content: bytes, seed: int, count: int = 80) -> list[bytes]:
    rng = random.Random(seed)
    cases = [content[: rng.randrange(len(content))] for _ in range(count // 2)]
    for _ in range(count // 2):
        flipped = bytearray(content)
        for _ in range(rng.randint(1, 8)):
            flipped[rng.randrange(len(flipped))] = rng.randrange(256)
        cases.append(bytes(flipped))
    return cases


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_a_damaged_file_is_a_document_or_a_failure_record(name: str) -> None:
    content = SAMPLES[name]()
    assert parse(content, name=name, media_type=None).text  # the intact file reads
    outcomes: dict[str, int] = {}
    for case in variants(content, seed=len(name)):
        try:
            parse(case, name=name, media_type=None)
            outcomes["parsed"] = outcomes.get("parsed", 0) + 1
        except ItemError as exc:
            assert exc.permanent and exc.error_class in {
                "parse_error",
                "unsupported_type",
                "empty_document",
                "too_large",
                "encrypted",
            }, exc
            outcomes[exc.error_class] = outcomes.get(exc.error_class, 0) + 1
    assert sum(outcomes.values()) == 80


def test_every_format_has_a_sample() -> None:
    sampled = {Path(name).suffix.lower() for name in SAMPLES}
    missing = set(SUPPORTED_EXTENSIONS) - sampled - ALIASES - {".gz", ".bz2", ".xz"}
    code = {".py"}  # one source file stands for every code extension: one parser
    assert missing - {e for e in missing if SUPPORTED_EXTENSIONS[e] == "code"} == set()
    assert code <= sampled


def _zip(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _tar_gz(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _mbox(tmp_path: Path) -> bytes:
    box = mailbox.mbox(str(tmp_path / "m.mbox"))
    for n in range(3):
        box.add(make_eml().replace(b"Budget for Q3", f"Budget {n}".encode()))
    box.flush()
    box.close()
    return (tmp_path / "m.mbox").read_bytes()


CONTAINED = {"a.md": b"# A\n\nalpha text", "b.csv": b"x,y\n1,2\n", "c.txt": b"gamma " * 50}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", ["docs.zip", "bundle.tar.gz", "team.mbox"])
def test_a_damaged_container_gives_members_or_a_failure(name: str, tmp_path: Path) -> None:
    content = {
        "docs.zip": lambda: _zip({**CONTAINED, "inner.zip": _zip(CONTAINED)}),
        "bundle.tar.gz": lambda: _tar_gz(CONTAINED),
        "team.mbox": lambda: _mbox(tmp_path),
    }[name]()
    limits = ContainerLimits(max_member_bytes=100_000)
    assert len(list(members(content, name, limits))) >= 3  # the intact one reads
    outcomes = 0
    for case in variants(content, seed=len(name), count=40):
        try:
            for found in members(case, name, limits):
                if isinstance(found, Member):
                    try:
                        parse(found.content, name=found.path, media_type=found.media_type)
                    except ItemError as exc:
                        assert exc.permanent, exc
                else:
                    assert found.error.permanent, found.error
        except ItemError as exc:
            assert exc.permanent and exc.error_class in {"parse_error", "too_large"}, exc
        outcomes += 1
    assert outcomes == 40


@pytest.mark.timeout(300)
def test_a_damaged_image_is_read_by_ocr_or_a_failure_record() -> None:
    from test_ocr import make_png

    content = make_png()
    ocr = ParseOptions(ocr=True)
    assert parse(content, name="scan.png", media_type=None, options=ocr).text
    for case in variants(content, seed=7, count=12):  # Tesseract is slow: fewer cases
        try:
            parse(case, name="scan.png", media_type=None, options=ocr)
        except ItemError as exc:
            assert exc.permanent and exc.error_class in {
                "parse_error",
                "empty_document",
                "too_large",
                "unsupported_type",
            }, exc
