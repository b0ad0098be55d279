"""Bad input for every parser of issue 27: truncated and byte-flipped real files.

OpenDocument, RTF, EPUB, PDF and a name without an extension are among them.

Each case is a real file of its format cut at a random offset or with random bytes
flipped (seeded, so a failure replays). ``parse`` must return a document or raise an
``ItemError`` (a failure record); any other exception is a crash of the sync run, and
the test's timeout catches a hang.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
from cfb import sample_msg
from formats import CHANGELOG, RST, compressed, make_eml, make_pptx, make_xlsx
from formats_more import RTF, make_epub, make_odp, make_ods, make_odt, make_pdf

from headwater.errors import ItemError
from headwater.pipeline.parse import parse

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
}


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
