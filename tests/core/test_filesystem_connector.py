"""The filesystem connector: conformance suite plus its own rules."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from headwater import Workspace
from headwater.connectors.filesystem import FilesystemConnector, FilesystemOptions, matches_any
from headwater.connectors.globs import KeyFilter
from headwater.connectors.names import is_utf8, printable
from headwater.connectors.testing import (
    FAR_FUTURE,
    ConnectorConformance,
    ConnectorHarness,
    collect,
    no_known,
)
from headwater.errors import FatalError, ItemError
from headwater.types import Failure, SourceDocument, Window
from workspace_helpers import filesystem_source, write_config


def make(root: Path, **options: object) -> FilesystemConnector:
    return FilesystemConnector(FilesystemOptions(root=str(root), **options))  # type: ignore[arg-type]


class TestFilesystemConformance(ConnectorConformance, connector=FilesystemConnector):
    @pytest.fixture
    def harness(self, corpus: Path, tmp_path: Path) -> ConnectorHarness:
        return ConnectorHarness(
            make=lambda: make(corpus),
            make_broken=lambda: make(tmp_path / "missing"),
            make_failing_listing=lambda: UnlistableFolder(corpus, "guides"),
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
    items = read_all(make(corpus, follow_symlinks=True))
    followed = {i.object_id for i in items if isinstance(i, SourceDocument)}
    assert "link-in/vacation.md" in followed
    assert not any("secret" in i for i in followed)
    assert not any(i.startswith("link-out") for i in followed)
    refused = {i.object_id: i for i in items if isinstance(i, Failure)}
    assert sorted(refused) == ["link-out", "secret-link.md"]
    for failure in refused.values():
        assert (failure.error_class, failure.permanent, failure.prefix) == (
            "link_out_of_scope",
            True,
            False,
        )
        assert "outside the root" in failure.message and "not read" in failure.message


def test_too_large_files_are_listed_but_their_read_is_a_permanent_failure(corpus: Path) -> None:
    (corpus / "big.txt").write_text("x" * 5000)
    connector = make(corpus, max_file_bytes=1000)
    (big,) = [i for i in read_all(connector) if i.object_id == "big.txt"]
    assert isinstance(big, SourceDocument) and big.metadata["size"] == "5000"
    assert big.fetch_ref is not None
    with pytest.raises(ItemError) as refused:
        connector.fetch(big.fetch_ref)
    assert (refused.value.error_class, refused.value.permanent) == ("too_large", True)
    assert "max_file_bytes" in str(refused.value) and connector.files_read == 0


def test_version_hint_is_mtime_and_size_and_read_is_lazy(corpus: Path) -> None:
    connector = make(corpus)
    docs = [i for i in read_all(connector) if isinstance(i, SourceDocument)]
    stat = (corpus / "readme.md").stat()
    readme = next(d for d in docs if d.object_id == "readme.md")
    assert readme.version == f"{stat.st_mtime_ns}:{stat.st_size}"
    assert readme.content is None and readme.fetch_ref is not None
    assert json.loads(readme.fetch_ref) == {"path": "readme.md", "file": [stat.st_dev, stat.st_ino]}
    assert connector.files_read == 0
    assert connector.fetch(readme.fetch_ref).startswith(b"# Readme")
    assert connector.fetch("readme.md").startswith(b"# Readme")  # a bare path reads too
    assert connector.files_read == 2


class UnlistableFolder(FilesystemConnector):
    """Lists like the real connector except one folder, whose listing raises EACCES
    (root ignores permission bits, so a chmod cannot make a listing fail here)."""

    def __init__(self, root: Path, folder: str, **options: object) -> None:
        super().__init__(FilesystemOptions(root=str(root), **options))  # type: ignore[arg-type]
        self.folder = self.root / folder

    def _scandir(self, directory: Path) -> list[os.DirEntry[str]]:
        if directory == self.folder:
            raise PermissionError(13, "Permission denied", str(directory))
        return super()._scandir(directory)


def test_an_unlistable_folder_is_one_prefix_failure_and_enumerate_raises(corpus: Path) -> None:
    connector = UnlistableFolder(corpus, "guides")
    items = read_all(connector)
    failures = [i for i in items if isinstance(i, Failure)]
    assert [(f.object_id, f.stage, f.prefix) for f in failures] == [("guides", "enumerate", True)]
    assert "guides" in failures[0].message and "Permission denied" in failures[0].message
    assert failures[0].covers("guides/vacation.md") and not failures[0].covers("guidesx.md")
    assert {i.object_id for i in items if isinstance(i, SourceDocument)} == {
        "notes/deploy.txt",
        "notes/welcome.html",
        "readme.md",
    }
    with pytest.raises(FatalError, match="guides"):
        list(connector.enumerate())


def test_unreadable_folder_keeps_its_files(tmp_path: Path, manifest_url: str, corpus: Path) -> None:
    """A folder replaced by a link that cannot be followed (ELOOP, which fails for root
    too) is a failure naming the folder; its known files stay, the run has errors."""
    config = write_config(
        tmp_path,
        manifest_url=manifest_url,
        sources=filesystem_source(corpus, extra="follow_symlinks = true\nprune_max_fraction = 1.0"),
    )
    with Workspace.open(config) as ws:
        assert ws.sync(index=False).runs[0].counts.new == 5
        shutil.rmtree(corpus / "guides")
        os.symlink("guides", corpus / "guides")  # a link to itself: stat raises ELOOP
        run = ws.sync(index=False).runs[0]
        assert run.status == "completed_with_errors"
        assert run.counts.deleted == 0 and run.counts.failed == 1
        for path in ("guides/vacation.md", "guides/expenses.md"):
            assert ws.document(source="docs", object_id=path)["state"] == "active"
        failures = ws.failures(source="docs")
        assert [(f.object_id, f.stage) for f in failures] == [("guides", "enumerate")]
        # The folder comes back: the failure resolves, nothing was ever deleted.
        os.unlink(corpus / "guides")
        (corpus / "guides").mkdir()
        (corpus / "guides" / "vacation.md").write_text("# Vacation policy\n\n25 days.\n")
        again = ws.sync(index=False).runs[0]
        assert again.status == "succeeded" and again.counts.deleted == 1  # expenses.md
        assert ws.failures(source="docs") == []


def test_a_file_name_that_is_not_utf8_is_one_failure_and_the_rest_syncs(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    with open(os.path.join(os.fsencode(corpus), b"caf\xe9.md"), "wb") as handle:
        handle.write(b"# Latin-1 name\n")
    config = write_config(tmp_path, manifest_url=manifest_url, sources=filesystem_source(corpus))
    with Workspace.open(config) as ws:
        run = ws.sync(index=False).runs[0]
        assert run.status == "completed_with_errors"
        assert (run.counts.new, run.counts.failed) == (5, 1)
        [failure] = ws.failures(source="docs")
        assert failure.object_id == "caf\\xe9.md" and failure.stage == "enumerate"
        assert "'caf\\xe9.md'" in failure.message and "not valid UTF-8" in failure.message
        again = ws.sync(index=False).runs[0]  # the next run is no worse
        assert (again.status, again.counts.unchanged, again.counts.deleted) == (
            "completed_with_errors",
            5,
            0,
        )


def test_printable_escapes_control_characters_and_undecodable_bytes() -> None:
    assert printable("plain/naïve – ok.md") == "plain/naïve – ok.md"
    assert printable("a\nb\tc\x1b[31m\x7f\x85.md") == "a\\nb\\tc\\x1b[31m\\x7f\\x85.md"
    assert printable(os.fsdecode(b"caf\xe9.md")) == "caf\\xe9.md"
    assert is_utf8("ok.md") and not is_utf8(os.fsdecode(b"\xff.md"))


def test_failure_messages_escape_control_characters_in_names(corpus: Path) -> None:
    (corpus / "big\x1b[2J\n.txt").write_text("x" * 5000)
    connector = make(corpus, max_file_bytes=1000)
    [big] = [i for i in read_all(connector) if i.object_id.startswith("big")]
    assert big.object_id == "big\x1b[2J\n.txt"  # the id stays the real name
    assert isinstance(big, SourceDocument) and big.fetch_ref is not None
    with pytest.raises(ItemError) as refused:
        connector.fetch(big.fetch_ref)
    message = str(refused.value)
    assert "big\\x1b[2J\\n.txt" in message
    assert not any(ord(c) < 0x20 for c in message)
    folder = UnlistableFolder(corpus, "guides")
    os.rename(corpus / "guides", corpus / "gui\rdes")
    folder.folder = folder.root / "gui\rdes"
    [unlisted] = [i for i in read_all(folder) if isinstance(i, Failure) and i.prefix]
    assert unlisted.object_id == "gui\rdes" and unlisted.covers("gui\rdes/vacation.md")
    assert "'gui\\rdes'" in unlisted.message and "\r" not in unlisted.message


def test_a_link_that_cannot_be_followed_is_named_a_link_not_a_folder(corpus: Path) -> None:
    os.symlink("missing.md", corpus / "dangling.md")
    os.symlink("loop-b", corpus / "loop-a")
    os.symlink("loop-a", corpus / "loop-b")
    found = [i for i in read_all(make(corpus, follow_symlinks=True)) if isinstance(i, Failure)]
    assert [f.object_id for f in found] == ["dangling.md", "loop-a", "loop-b"]
    for failure in found:
        assert failure.message.startswith(f"link '{failure.object_id}' could not be followed")
        assert "folder" not in failure.message and "Fix or remove the link" in failure.message
        assert failure.prefix and failure.stage == "enumerate"


def test_the_workspace_state_dir_under_the_root_is_never_read(
    tmp_path: Path, manifest_url: str
) -> None:
    """`root = "."` beside headwater.toml: the manifest, indexes and content store under
    it are not documents (they were read as dead `unsupported_type` failures, each run)."""
    (tmp_path / "notes.md").write_text("# Notes\n\nSomething worth finding.\n")
    source = filesystem_source(tmp_path, extra='exclude = ["headwater.toml"]')
    config = write_config(tmp_path, manifest_url=manifest_url, sources=source)
    with Workspace.open(config) as ws:
        for _ in range(2):  # the second run sees the state the first one wrote
            run = ws.sync().runs[0]
            assert run.status == "succeeded", ws.failures()
            assert run.counts.seen == 1
        assert ws.failures() == []


def test_an_exclude_naming_a_folder_excludes_all_under_it_as_in_gitignore() -> None:
    for pattern in ("drafts", "drafts/", "drafts/**", "**/drafts/**"):
        selects = KeyFilter(["**/*"], [pattern])
        assert not selects("drafts/a.md") and not selects("drafts/old/b.md"), pattern
        assert selects("drafts.md") and selects("draftsx/a.md"), pattern
        assert selects.excludes_folder("drafts"), pattern
    selects = KeyFilter(["**/*"], ["drafts/*.md", "*.tmp"])
    assert not selects("drafts/a.md") and selects("drafts/a.txt") and selects("drafts/x/a.md")
    assert not selects.excludes_folder("drafts")
    assert not selects("cache.tmp/page.md")  # a folder matching `*.tmp`, as git does
    assert KeyFilter(["**/*"], ["drafts/"])("drafts")  # a file: `drafts/` names folders only


@pytest.mark.parametrize("pattern", ["guides", "guides/", "guides/**"])
def test_an_excluded_folder_is_never_listed_so_never_a_failure(corpus: Path, pattern: str) -> None:
    """The unlistable-folder failure says "or exclude it": excluding it must end it."""
    connector = UnlistableFolder(corpus, "guides", exclude=[pattern])
    items = read_all(connector)
    assert not [i for i in items if isinstance(i, Failure)]
    assert {i.object_id for i in items if isinstance(i, SourceDocument)} == {
        "notes/deploy.txt",
        "notes/welcome.html",
        "readme.md",
    }
    assert sorted(connector.enumerate()) == ["notes/deploy.txt", "notes/welcome.html", "readme.md"]


def test_excluding_a_folder_by_name_deletes_its_documents(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    config = write_config(tmp_path, manifest_url=manifest_url, sources=filesystem_source(corpus))
    with Workspace.open(config) as ws:
        assert ws.sync(index=False).runs[0].counts.new == 5
    config.write_text(config.read_text().replace("access = ", 'exclude = ["guides"]\naccess = '))
    with Workspace.open(config) as ws:
        run = ws.sync(index=False).runs[0]  # 2 of 5: excluded_by_config is never blocked
        assert (run.status, run.counts.deleted, run.prune_blocked) == ("succeeded", 2, None)
        assert ws.document(source="docs", object_id="guides/vacation.md")["state"] == "deleted"
