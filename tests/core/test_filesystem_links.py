"""Symlinks and swaps: one source never publishes another source's files.

Two sources over one root, ``public/**`` for everyone and ``hr/**`` for HR. A followed
link must stay inside its own source's scope (root and include/exclude), and a read must
open the very regular file the listing saw: a file or folder swapped for a link between
listing and read is not read.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

import pytest

from headwater import Workspace
from headwater.connectors.filesystem import FilesystemConnector, FilesystemOptions
from headwater.connectors.testing import FAR_FUTURE, collect, no_known
from headwater.errors import ItemError, NotFoundError
from headwater.types import Failure, SourceDocument, Window
from workspace_helpers import write_config

SECRET = "zebracorn"  # a token only HR's salaries file holds


@pytest.fixture
def shared(tmp_path: Path) -> Path:
    root = tmp_path / "share"
    (root / "public" / "sub").mkdir(parents=True)
    (root / "hr").mkdir()
    (root / "hr" / "salaries.md").write_text(f"# Salaries\n\nThe CEO earns {SECRET} coins.\n")
    (root / "public" / "handbook.md").write_text("# Handbook\n\nWelcome aboard, everyone.\n")
    (root / "public" / "sub" / "faq.md").write_text("# FAQ\n\nAsk the front desk.\n")
    return root


def two_sources(tmp_path: Path, manifest_url: str, root: Path, public_extra: str = "") -> Path:
    sources = (
        f'[[source]]\nid = "public"\ntype = "filesystem"\nroot = "{root}"\n'
        f'include = ["public/**"]\naccess = {{ public = true }}\n{public_extra}\n'
        f'[[source]]\nid = "hr"\ntype = "filesystem"\nroot = "{root}"\n'
        'include = ["hr/**"]\naccess = { groups = ["hr"] }\n'
    )
    return write_config(tmp_path, manifest_url=manifest_url, sources=sources)


def hits(ws: Workspace, query: str, **who: object) -> set[tuple[str, str]]:
    """(source, path under the shared root) of each keyword hit."""
    return {
        (h.source, Path(h.locator).relative_to(ws.config.source[0].model_extra["root"]).as_posix())  # type: ignore[index]
        for h in ws.search(query, mode="keyword", **who)  # type: ignore[arg-type]
    }


def test_a_followed_link_into_another_sources_files_is_never_indexed_with_its_acl(
    tmp_path: Path, manifest_url: str, shared: Path
) -> None:
    os.symlink("../hr/salaries.md", shared / "public" / "leak.md")
    os.symlink("../hr", shared / "public" / "hr-folder")
    os.symlink("handbook.md", shared / "public" / "alias.md")  # inside the scope: followed
    config = two_sources(tmp_path, manifest_url, shared, "follow_symlinks = true")
    with Workspace.open(config) as ws:
        report = ws.sync()
        assert hits(ws, SECRET, user="anyone@example.com") == set()
        assert hits(ws, SECRET, user="kim@example.com", groups=["hr"]) == {("hr", "hr/salaries.md")}
        assert ("public", "public/alias.md") in hits(ws, "aboard", user="anyone@example.com")
        failures = {(f.object_id, f.error_class) for f in ws.failures(source="public")}
        assert failures == {
            ("public/leak.md", "link_out_of_scope"),
            ("public/hr-folder/salaries.md", "link_out_of_scope"),
        }
        [message] = {f.message for f in ws.failures(source="public") if "leak" in f.object_id}
        assert "'hr/salaries.md', which this source does not select" in message
        public = next(r for r in report.runs if r.source == "public")
        assert public.status == "completed_with_errors" and public.counts.new == 3


class SwapBeforeRead(FilesystemConnector):
    """The real connector, but ``swaps[path]`` runs between the listing and the read of
    ``path``, as a user racing the sync would (a link renamed over a file or folder)."""

    swaps: ClassVar[dict[str, Callable[[], None]]] = {}

    def fetch(self, ref: str) -> bytes:
        path = json.loads(ref)["path"] if ref.startswith("{") else ref
        swap = self.swaps.pop(path, None)
        if swap is not None:
            swap()
        return super().fetch(ref)


def replace_with_link(path: Path, target: str) -> None:
    """Atomically put a link to ``target`` where ``path`` is (a file or a folder)."""
    temporary = path.with_name(path.name + ".swap")
    os.symlink(target, temporary)
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    os.replace(temporary, path)


@pytest.mark.parametrize(
    ("path", "target", "reads"),
    [
        ("public/handbook.md", "../hr/salaries.md", "public/handbook.md"),
        ("public/sub", "../hr", "public/sub/faq.md"),
    ],
)
def test_a_file_or_folder_swapped_for_a_link_between_listing_and_read_reads_nothing(
    tmp_path: Path, manifest_url: str, shared: Path, path: str, target: str, reads: str
) -> None:
    if path == "public/sub":  # the folder's link must lead to a file of the same name
        (shared / "hr" / "faq.md").write_text(f"# FAQ\n\n{SECRET} lives here.\n")
    config = two_sources(tmp_path, manifest_url, shared)
    with Workspace.open(config, connector_types={"filesystem": SwapBeforeRead}) as ws:
        SwapBeforeRead.swaps[reads] = lambda: replace_with_link(shared / path, target)
        ws.sync()
        assert hits(ws, SECRET, user="anyone@example.com") == set()
        failed = {f.object_id: f for f in ws.failures(source="public")}
        assert failed[reads].error_class == "replaced"
        assert "changed between listing and read" in failed[reads].message
        assert "nothing was read" in failed[reads].message
        with pytest.raises(NotFoundError):
            ws.document(source="public", object_id=reads)


def test_a_file_swapped_for_another_file_is_not_read(shared: Path) -> None:
    """Same path, another inode (a hard link to HR's file moved in its place)."""
    connector = FilesystemConnector(
        FilesystemOptions(root=str(shared), include=["public/**"])  # type: ignore[call-arg]
    )
    items = collect(connector.read(Window(None, FAR_FUTURE), None, no_known)).items
    [handbook] = [
        i for i in items if isinstance(i, SourceDocument) and i.object_id == "public/handbook.md"
    ]
    os.link(shared / "hr" / "salaries.md", shared / "public" / "swap.md")
    os.replace(shared / "public" / "swap.md", shared / "public" / "handbook.md")
    assert handbook.fetch_ref is not None
    with pytest.raises(ItemError) as caught:
        connector.fetch(handbook.fetch_ref)
    assert caught.value.error_class == "replaced" and not caught.value.permanent
    assert connector.files_read == 0


def test_a_fifo_swapped_in_is_refused_without_blocking(shared: Path) -> None:
    connector = FilesystemConnector(FilesystemOptions(root=str(shared)))  # type: ignore[call-arg]
    (shared / "public" / "handbook.md").unlink()
    os.mkfifo(shared / "public" / "handbook.md")
    with pytest.raises(ItemError, match="no longer a regular file"):
        connector.fetch("public/handbook.md")


def test_a_followed_link_retargeted_out_of_scope_before_the_read_is_not_read(
    shared: Path,
) -> None:
    os.symlink("handbook.md", shared / "public" / "alias.md")
    connector = FilesystemConnector(
        FilesystemOptions(  # type: ignore[call-arg]
            root=str(shared), include=["public/**"], follow_symlinks=True
        )
    )
    items = collect(connector.read(Window(None, FAR_FUTURE), None, no_known)).items
    [alias] = [
        i for i in items if isinstance(i, SourceDocument) and i.object_id == "public/alias.md"
    ]
    assert alias.fetch_ref is not None
    assert connector.fetch(alias.fetch_ref).startswith(b"# Handbook")
    replace_with_link(shared / "public" / "alias.md", "../hr/salaries.md")
    with pytest.raises(ItemError) as caught:
        connector.fetch(alias.fetch_ref)
    assert caught.value.error_class == "link_out_of_scope"
    assert not [i for i in items if isinstance(i, Failure)]
