"""The formats of issue 27 through a real sync: searchable phrases, stable re-syncs and
``[parse]`` settings that change which files are read.

A real workspace (SQLite and PostgreSQL manifests, the fake embedder, the SQLite index)
syncs a folder of real files: compressed Debian docs, reStructuredText, a workbook,
slides, a mail message, JSON and YAML. Each file's known phrase must be found by a
keyword search, a second sync must read nothing and change nothing, and a ``sync
--full`` must find every checksum and signature unchanged (a parser's metadata
included).
"""

from __future__ import annotations

import gzip
import json
import lzma
from pathlib import Path

from formats import CHANGELOG, RST, make_eml, make_pptx, make_xlsx

from headwater import Workspace
from workspace_helpers import filesystem_source, write_config

PHRASES = {
    "README.Debian.gz": "lovelace compressed readme",
    "changelog.Debian.xz": "compressed changelogs inner name",
    "install.rst": "reads restructuredtext docutils",
    "figures.xlsx": "grace hopper admiral",
    "roadmap.pptx": "mention hiring plan",
    "budget.eml": "travel budget approved",
    "package.json": "headwater sync search",
    "values.yaml": "replica count three",
}


def write_corpus(corpus: Path) -> None:
    corpus.mkdir()
    (corpus / "README.Debian.gz").write_bytes(
        gzip.compress(b"Lovelace wrote this compressed README.")
    )
    (corpus / "changelog.Debian.xz").write_bytes(lzma.compress(CHANGELOG.encode()))
    (corpus / "install.rst").write_bytes(RST)
    (corpus / "figures.xlsx").write_bytes(make_xlsx())
    (corpus / "roadmap.pptx").write_bytes(make_pptx())
    (corpus / "budget.eml").write_bytes(make_eml())
    (corpus / "package.json").write_text(json.dumps({"name": "headwater sync search"}))
    (corpus / "values.yaml").write_text("# replica count: three\nreplicas: 3\n")


def test_every_new_format_is_searchable_and_a_resync_changes_nothing(
    tmp_path: Path, manifest_url: str
) -> None:
    corpus = tmp_path / "corpus"
    write_corpus(corpus)
    config = write_config(
        tmp_path,
        manifest_url=manifest_url,
        sources=filesystem_source(corpus, access="{ public = true }"),
    )
    with Workspace.open(config) as ws:
        (run,) = ws.sync().runs
        assert ws.failures() == []
        assert run.counts.new == len(PHRASES)
        for name, phrase in PHRASES.items():
            hits = ws.search(phrase, mode="keyword", k=3)
            assert hits and hits[0]["locator"].endswith(name), (name, hits)
        row = ws.search("grace hopper admiral", mode="keyword", per_document=False, k=1)[0]
        assert "Name: Grace Hopper; Role: Admiral" in row["chunk"]
        mail = ws.document(source="docs", object_id="budget.eml")
        assert mail.record.title == "Budget for Q3"
        assert mail.record.metadata["from"] == "Alice Example <alice@example.org>"
        again = ws.sync().runs[0]
        assert (again.fetched, again.counts.unchanged, again.counts.changed) == (0, len(PHRASES), 0)
        full = ws.sync(full=True).runs[0]
        assert (full.counts.unchanged, full.counts.changed) == (len(PHRASES), 0)


def test_parse_settings_of_the_workspace_and_the_source_read_more_files(
    tmp_path: Path, manifest_url: str
) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    # Latin-1: not UTF-8, so its bytes do not say text and only its extension can
    (corpus / "nginx.site").write_bytes(
        "server_name lighthouse.example; # Überfahrt\n".encode("latin-1")
    )
    (corpus / "page.tpl").write_text(  # a template: its bytes say text, not HTML
        "{# harbour #}\n"
        "<html><head><title>Harbour page</title></head><body><p>Harbour pilots.</p></body></html>"
    )
    (corpus / "notes.txt").write_text("Plain notes about the harbour.")

    def configure(source_parse: str, workspace_parse: str) -> Path:
        return write_config(
            tmp_path,
            manifest_url=manifest_url,
            sources=filesystem_source(corpus, access="{ public = true }", extra=source_parse),
            extra=workspace_parse,
        )

    config = configure("", "")
    with Workspace.open(config) as ws:
        ws.sync()
        assert {f.object_id: f.error_class for f in ws.failures()} == {
            "nginx.site": "unsupported_type",
        }
        assert "[parse] text_extensions" in ws.failures()[0].message
        assert ws.document(source="docs", object_id="page.tpl").record.title == "page.tpl"
        plain_version = ws.document(source="docs", object_id="notes.txt").record.pipeline_version
    configure(
        'parse = { text_extensions = [".SITE"] }',
        '[parse]\nmedia_types = { ".tpl" = "text/html" }\n',
    )
    with Workspace.open(config) as ws:
        (run,) = ws.sync().runs  # no --full: the source's content version changed
        assert ws.failures() == [] and (run.counts.new, run.counts.changed) == (1, 2)
        assert ws.search("lighthouse", mode="keyword")[0]["locator"].endswith("nginx.site")
        page = ws.document(source="docs", object_id="page.tpl")
        assert page.record.title == "Harbour page"
        assert page.record.pipeline_version != plain_version
        assert ws.sync().runs[0].fetched == 0
