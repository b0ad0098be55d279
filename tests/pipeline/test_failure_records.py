"""The pipeline's refusals end as permanent failure records, and the batch goes on.

A real workspace syncs a folder holding a zip-bomb DOCX, a PNG named ``.md``, a text over
``max_document_chars`` and one good file, on SQLite and on PostgreSQL: the bad ones are
dead-lettered at once with a message naming the limit and the fix, the good one is
indexed, and a second sync does not read the bad files again.
"""

from __future__ import annotations

from pathlib import Path

from test_zip_limits import Entry, deflate_zeros, docx_entries, write_zip

from headwater import Workspace
from headwater.pipeline.chunk import DEFAULT_MAX_DOCUMENT_CHARS
from workspace_helpers import filesystem_source, write_config


def test_bombs_binaries_and_huge_texts_are_dead_lettered_and_the_rest_indexed(
    tmp_path: Path, manifest_url: str
) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    packed, crc = deflate_zeros(20 * 1024 * 1024)
    entries = [e for e in docx_entries() if e.name != "word/document.xml"]
    entries.append(Entry("word/document.xml", packed, crc, 20 * 1024 * 1024))
    (corpus / "bomb.docx").write_bytes(write_zip(entries))
    (corpus / "diagram.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(4000))
    words = "lantern river " * (DEFAULT_MAX_DOCUMENT_CHARS // 14 + 10)
    (corpus / "huge.txt").write_text(words, encoding="utf-8")
    (corpus / "good.md").write_text("# Good\n\nThe river runs past the mill.\n", encoding="utf-8")
    config = write_config(
        tmp_path,
        manifest_url=manifest_url,
        sources=filesystem_source(corpus, access="{ public = true }"),
    )
    with Workspace.open(config) as ws:
        result = ws.sync()
        (run,) = result.runs
        assert run.status == "completed_with_errors"
        assert run.counts.failed == 2  # the sync's own failures: bomb and binary
        # huge.txt fails to chunk and is indexed by its metadata instead; good.md and
        # bomb.docx's metadata-only document are indexed
        assert result.index.failed == 1 and result.index.replaced == 3
        failures = {f.object_id: f for f in ws.failures()}
        assert set(failures) == {"bomb.docx", "diagram.md", "huge.txt"}
        assert all(f.permanent and f.status == "dead" for f in failures.values())
        bomb, binary, huge = failures["bomb.docx"], failures["diagram.md"], failures["huge.txt"]
        assert (bomb.stage, bomb.error_class) == ("parse", "too_large")
        assert "word/document.xml" in bomb.message and "exclude it" in bomb.message
        assert (binary.stage, binary.error_class) == ("parse", "unsupported_type")
        assert "binary" in binary.message and "Exclude it" in binary.message
        assert (huge.stage, huge.error_class) == ("chunk", "too_large")
        assert f"{DEFAULT_MAX_DOCUMENT_CHARS:,}" in huge.message
        assert "max_document_chars" in huge.message
        hits = ws.search("river mill", mode="keyword")
        assert [h["title"] for h in hits] == ["Good"]
        again = ws.sync().runs[0]
        assert again.fetched == 0


def test_max_document_chars_is_set_in_the_chunker_section(
    tmp_path: Path, manifest_url: str
) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "long.txt").write_text("river " * 40, encoding="utf-8")
    (corpus / "short.txt").write_text("river mill", encoding="utf-8")
    config = write_config(
        tmp_path,
        manifest_url=manifest_url,
        sources=filesystem_source(corpus, access="{ public = true }"),
        extra="[chunker]\nmax_document_chars = 100\n",
    )
    with Workspace.open(config) as ws:
        assert ws.chunker.max_document_chars == 100
        result = ws.sync()
        assert result.index.failed == 1 and result.index.replaced == 1
        (failure,) = ws.failures()
        assert (failure.object_id, failure.stage, failure.error_class) == (
            "long.txt",
            "chunk",
            "too_large",
        )
        assert failure.permanent and "the limit (chunker max_document_chars) is 100." in (
            failure.message
        )
        assert "headwater dlq redrive --stage chunk" in failure.message
    # The fix the message names: raise the limit, redrive the chunk-stage entries.
    write_config(
        tmp_path,
        manifest_url=manifest_url,
        sources=filesystem_source(corpus, access="{ public = true }"),
        extra="[chunker]\nmax_document_chars = 1000\n",
    )
    with Workspace.open(config) as ws:
        report = ws.redrive([], stage="chunk")
        assert (report["redriven"], report["resolved"]) == (1, 1)
        assert ws.failures() == []
        titles = {hit["title"] for hit in ws.search("river", mode="keyword")}
        assert titles == {"long.txt", "short.txt"}
