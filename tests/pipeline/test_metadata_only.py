"""Files that cannot be read are still found by their names, as metadata-only documents.

A real workspace syncs a password-protected PDF (written by reportlab, encrypted by
pypdf), a file over ``max_file_bytes`` and a JSON file that does not parse. Each is a
failure record and a document flagged ``content: "unavailable"`` with its reason, found
by a search for its name by a user of the source's group and by nobody else; a later
read that parses replaces it; ``metadata_only_on_failure = false`` turns it off.
"""

from __future__ import annotations

from pathlib import Path

from formats_more import make_pdf

from headwater import Workspace
from workspace_helpers import filesystem_source, write_config


def corpus_with_unreadable_files(corpus: Path) -> None:
    corpus.mkdir()
    (corpus / "salaries-2024.pdf").write_bytes(make_pdf(["secret pay"], password="pw"))
    (corpus / "inventory-dump.txt").write_text("widget " * 20_000)  # 140,000 bytes
    (corpus / "settings-broken.json").write_text('{"name": ')
    (corpus / "fine.md").write_text("# Fine\n\nA readable note.")


def test_unreadable_files_are_metadata_only_documents_under_their_acl(
    tmp_path: Path, manifest_url: str
) -> None:
    corpus = tmp_path / "corpus"
    corpus_with_unreadable_files(corpus)
    config = write_config(
        tmp_path,
        manifest_url=manifest_url,
        sources=filesystem_source(
            corpus, access='{ groups = ["hr"] }', extra="max_file_bytes = 100000"
        ),
    )
    with Workspace.open(config) as ws:
        ws.sync()
        failures = {f.object_id: (f.stage, f.error_class) for f in ws.failures()}
        assert failures == {
            "salaries-2024.pdf": ("parse", "encrypted"),
            "inventory-dump.txt": ("fetch", "too_large"),
            "settings-broken.json": ("parse", "parse_error"),
        }
        pdf = ws.document(source="docs", object_id="salaries-2024.pdf").as_dict()
        assert pdf["content"] == "unavailable"
        assert pdf["content_reason"].startswith("encrypted: ")
        assert pdf["metadata"]["content"] == "unavailable"
        assert pdf["metadata"]["media_type"] == "application/pdf"
        assert pdf["title"] == "salaries-2024.pdf"
        big = ws.document(source="docs", object_id="inventory-dump.txt").as_dict()
        assert big["metadata"]["size"] == "140000" and "max_file_bytes" in big["content_reason"]
        fine = ws.document(source="docs", object_id="fine.md").as_dict()
        assert (fine["content"], fine["content_reason"]) == ("available", None)
        for name in ("salaries-2024", "inventory-dump", "settings-broken"):
            (hit,) = ws.search(name, groups=["hr"], mode="keyword", k=1)
            assert name in hit["locator"]
            assert "Content unavailable (" in hit["chunk"]
            assert ws.search(name, groups=["staff"], mode="keyword", k=1) == []
        again = ws.sync().runs[0]  # the dead failures are skipped by their hints
        assert (again.counts.new, again.counts.changed, again.fetched) == (0, 0, 0)
        (corpus / "settings-broken.json").write_text('{"name": "repaired settings"}')
        ws.sync()
        fixed = ws.document(source="docs", object_id="settings-broken.json").as_dict()
        assert fixed["content"] == "available" and "content" not in fixed["metadata"]
        assert "settings-broken.json" not in {f.object_id for f in ws.failures()}
        (hit,) = ws.search("repaired settings", groups=["hr"], mode="keyword", k=1)
        assert "Content unavailable" not in hit["chunk"]


def test_metadata_only_documents_can_be_turned_off(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus_with_unreadable_files(corpus)
    config = write_config(
        tmp_path,
        manifest_url=None,
        sources=filesystem_source(corpus, extra="max_file_bytes = 100000"),
        extra="[parse]\nmetadata_only_on_failure = false\n",
    )
    with Workspace.open(config) as ws:
        (run,) = ws.sync().runs
        assert (run.counts.new, run.counts.failed) == (1, 3)
        assert ws.search("salaries", groups=["staff"], mode="keyword", k=1) == []
