"""The filesystem connector: conformance suite plus its own rules."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from headwater.connectors.filesystem import FilesystemConnector, FilesystemOptions, matches_any
from headwater.connectors.testing import (
    FAR_FUTURE,
    ConnectorConformance,
    ConnectorHarness,
    collect,
    no_known,
)
from headwater.types import Failure, SourceDocument, Window


def make(root: Path, **options: object) -> FilesystemConnector:
    return FilesystemConnector(FilesystemOptions(root=str(root), **options))  # type: ignore[arg-type]


class TestFilesystemConformance(ConnectorConformance):
    @pytest.fixture
    def harness(self, corpus: Path, tmp_path: Path) -> ConnectorHarness:
        return ConnectorHarness(
            make=lambda: make(corpus), make_broken=lambda: make(tmp_path / "missing")
        )


def read_all(connector: FilesystemConnector) -> list[SourceDocument | Failure]:
    items = collect(connector.read(Window(None, FAR_FUTURE), None, no_known)).items
    return [i for i in items if isinstance(i, SourceDocument | Failure)]


def test_globs() -> None:
    assert matches_any("a.md", ["**/*.md"])
    assert matches_any("x/y/a.md", ["**/*.md"])
    assert not matches_any("x/a.mdx", ["**/*.md"])
    assert matches_any("drafts/a.md", ["**/drafts/**"])
    assert matches_any("docs/drafts/a.md", ["**/drafts/**"])
    assert matches_any("a/b.md", ["*.md"])  # no slash: any depth, as in .gitignore
    assert not matches_any("a/b.md", ["/b.md"]) and matches_any("a/b.md", ["a/*.md"])


def test_include_and_exclude(corpus: Path) -> None:
    ids = [i.object_id for i in read_all(make(corpus, include=["**/*.md"], exclude=["notes/**"]))]
    assert ids == ["guides/expenses.md", "guides/vacation.md", "readme.md"]


def test_symlinks_are_skipped_by_default_and_never_leave_the_root(
    corpus: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# secret\n")
    os.symlink(outside, corpus / "link-out")
    os.symlink(corpus / "guides", corpus / "link-in")
    os.symlink(outside / "secret.md", corpus / "secret-link.md")
    default_ids = {i.object_id for i in read_all(make(corpus))}
    assert not any(i.startswith("link") or "secret" in i for i in default_ids)
    followed = {i.object_id for i in read_all(make(corpus, follow_symlinks=True))}
    assert "link-in/vacation.md" in followed
    assert not any("secret" in i for i in followed)
    assert not any(i.startswith("link-out") for i in followed)


def test_too_large_files_are_permanent_failures(corpus: Path) -> None:
    (corpus / "big.txt").write_text("x" * 5000)
    items = read_all(make(corpus, max_file_bytes=1000))
    failures = [i for i in items if isinstance(i, Failure)]
    assert [(f.object_id, f.error_class, f.permanent) for f in failures] == [
        ("big.txt", "too_large", True)
    ]
    assert "max_file_bytes" in failures[0].message


def test_version_hint_is_mtime_and_size_and_read_is_lazy(corpus: Path) -> None:
    connector = make(corpus)
    docs = [i for i in read_all(connector) if isinstance(i, SourceDocument)]
    stat = (corpus / "readme.md").stat()
    readme = next(d for d in docs if d.object_id == "readme.md")
    assert readme.version == f"{stat.st_mtime_ns}:{stat.st_size}"
    assert readme.content is None and readme.fetch_ref == "readme.md"
    assert connector.files_read == 0
    assert connector.fetch("readme.md").startswith(b"# Readme")
    assert connector.files_read == 1
