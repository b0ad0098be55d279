"""OpenDocument, RTF, EPUB, MSG, attachments, sniffing and encrypted files through a sync.

A real workspace syncs a folder of real files; each file's known phrase must be found by
a keyword search (a phrase of an e-mail's attachment finds the e-mail), the encrypted
files are ``encrypted`` failure records, and re-syncs change nothing.
"""

from __future__ import annotations

from email.message import EmailMessage
from pathlib import Path

from cfb import sample_msg
from formats_more import (
    RTF,
    make_epub,
    make_odp,
    make_ods,
    make_odt,
    make_pdf,
    ole_encrypted_office,
)

from headwater import Workspace
from workspace_helpers import filesystem_source, write_config

PHRASES = {
    "plan.odt": "headwater reads opendocument text",
    "figures.ods": "grace hopper admiral",
    "roadmap.odp": "ship odp reader first",
    "notes.rtf": "opens at nine",
    "guide.epub": "delta meets sea",
    "budget.msg": "travel budget approved",
    "pack.eml": "lantern queen vessel",
    "scan": "sniffed scanner copper",
}


def _pack() -> bytes:
    msg = EmailMessage()
    msg["From"] = "carol@example.org"
    msg["Subject"] = "Harbour list"
    msg.set_content("The list is attached.")
    msg.add_attachment(b"Vessel,Port\nLantern Queen,Harbour Grace\n", maintype="text",
                       subtype="csv", filename="vessels.csv")  # fmt: skip
    return msg.as_bytes()


def test_new_formats_are_searchable_and_encrypted_files_are_failure_records(
    tmp_path: Path, manifest_url: str
) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    files = {
        "plan.odt": make_odt(),
        "figures.ods": make_ods(),
        "roadmap.odp": make_odp(),
        "notes.rtf": RTF,
        "guide.epub": make_epub(),
        "budget.msg": sample_msg(),
        "pack.eml": _pack(),
        "scan": make_pdf(["Sniffed scanner page about copper"]),
        "locked.pdf": make_pdf(["Salaries"], password="hunter2"),
        "locked.docx": ole_encrypted_office(),
    }
    for name, content in files.items():
        (corpus / name).write_bytes(content)
    config = write_config(
        tmp_path,
        manifest_url=manifest_url,
        sources=filesystem_source(corpus, access="{ public = true }"),
    )
    with Workspace.open(config) as ws:
        (run,) = ws.sync().runs
        assert {f.object_id: f.error_class for f in ws.failures()} == {
            "locked.pdf": "encrypted",
            "locked.docx": "encrypted",
        }
        assert all("password-protected" in f.message for f in ws.failures())
        assert run.counts.new == len(PHRASES)
        for name, phrase in PHRASES.items():
            hits = ws.search(phrase, mode="keyword", k=3)
            assert hits and hits[0]["locator"].endswith(name), (name, hits)
        message = ws.document(source="docs", object_id="budget.msg")
        assert message.record.title == "Budget for Q3"
        assert message.record.metadata["from"] == "Alice Example <alice@example.org>"
        again = ws.sync().runs[0]
        assert (again.fetched, again.counts.unchanged, again.counts.changed) == (0, len(PHRASES), 0)
        full = ws.sync(full=True).runs[0]
        assert (full.counts.unchanged, full.counts.changed) == (len(PHRASES), 0)
