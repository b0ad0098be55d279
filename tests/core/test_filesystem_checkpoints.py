"""The filesystem connector checkpoints once a batch of files, not after every file.

A checkpoint per file was one object in two of a no-op's listing (docs/performance.md,
"No-op at scale"), while the runner commits only at a checkpoint that ends a full batch.
One per ``SourceContext.checkpoint_every`` files (the source's ``batch_size``) keeps what
a checkpoint is for: each is the cursor of the file yielded just before it, a read resumed
from it yields exactly the rest, a container's members are followed by one, no more than
a batch of files passes without one, and a run commits where it committed before.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

from headwater import Workspace
from headwater.connectors._archives import container_id
from headwater.connectors.base import SourceContext
from headwater.connectors.filesystem import FilesystemConnector, FilesystemOptions
from headwater.connectors.testing import FAR_FUTURE, collect, no_known
from headwater.manifest.runs import RunLedger
from headwater.types import Checkpoint, Failure, SourceDocument, Window
from workspace_helpers import filesystem_source, write_config

WINDOW = Window(None, FAR_FUTURE)
CHECKPOINT_EVERY = 64  # a source's default batch_size


def _connector(root: Path, every: int = CHECKPOINT_EVERY) -> FilesystemConnector:
    context = SourceContext("docs", root / ".headwater", checkpoint_every=every)
    return FilesystemConnector(FilesystemOptions(root=str(root)), context)


def _tree(root: Path) -> None:
    """150 files over three folders, a zip of three members among them."""
    for folder, count in (("a", 70), ("b", 50), ("c", 30)):
        for i in range(count):
            path = root / folder / f"f{i:03d}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"{folder} {i}")
    (root / "b" / "f020.md").unlink()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in ("m1.md", "m2.md", "m3.md"):
            archive.writestr(name, f"member {name}")
    (root / "b" / "f020.zip").write_bytes(buffer.getvalue())


def test_checkpoints_every_64_files_after_containers_and_resume_from_each(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    _tree(root)
    connector = _connector(root)
    items = collect(connector.read(WINDOW, None, no_known)).items
    documents = [i for i in items if isinstance(i, SourceDocument)]
    assert len(documents) == 149 + 3  # the zip is read as its three members
    points = [n for n, item in enumerate(items) if isinstance(item, Checkpoint)]
    files_since: list[int] = []  # files (a container is one) listed before each checkpoint
    files, container_ends = 0, []
    for n, item in enumerate(items):
        if isinstance(item, Checkpoint):
            before = items[n - 1]
            assert isinstance(before, SourceDocument)
            parts = container_id(before.object_id).split("/")
            assert item.cursor == json.dumps({"after": parts})
            files_since.append(files)
            files = 0
        elif isinstance(item, SourceDocument):
            here = container_id(item.object_id)
            previous = items[n - 1] if n else None
            same_file = (
                isinstance(previous, SourceDocument) and container_id(previous.object_id) == here
            )
            files += 0 if same_file else 1
            if here != item.object_id and not (
                n + 1 < len(items)
                and isinstance(items[n + 1], SourceDocument)
                and container_id(items[n + 1].object_id) == here
            ):
                container_ends.append(n)
    assert files <= CHECKPOINT_EVERY  # the tail after the last checkpoint
    assert all(0 < count <= CHECKPOINT_EVERY for count in files_since)
    assert [n + 1 for n in container_ends] == [p for p in points if p - 1 in container_ends]
    assert len(container_ends) == 1 and container_ends[0] + 1 in points
    full_runs = [count for count in files_since if count == CHECKPOINT_EVERY]
    assert len(full_runs) == len(points) - 1  # only the one after the zip comes early
    assert not [i for i in items if isinstance(i, Failure)]
    for n in points:
        checkpoint = items[n]
        assert isinstance(checkpoint, Checkpoint)
        resumed = collect(connector.read(WINDOW, checkpoint, no_known)).items
        assert [i.object_id for i in resumed if isinstance(i, SourceDocument)] == [
            i.object_id for i in items[n + 1 :] if isinstance(i, SourceDocument)
        ]


def test_a_checkpoint_names_the_last_file_of_a_folder_before_the_next(tmp_path: Path) -> None:
    """The cursor's folder part follows the folder of the file it names."""
    root = tmp_path / "root"
    for folder in ("x", "y/z"):
        for i in range(CHECKPOINT_EVERY - 1):
            path = root / folder / f"{i:03d}.txt"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(str(i))
    items = collect(_connector(root).read(WINDOW, None, no_known)).items
    cursors = [i.cursor for i in items if isinstance(i, Checkpoint)]
    # the 64th file is the first of y/z; the 126 files need only one checkpoint
    assert cursors == [json.dumps({"after": ["y", "z", "000.txt"]})]


def test_without_a_context_every_file_is_checkpointed(tmp_path: Path) -> None:
    root = tmp_path / "root"
    _tree(root)
    plain = FilesystemConnector(FilesystemOptions(root=str(root)))
    items = collect(plain.read(WINDOW, None, no_known)).items
    files = {container_id(i.object_id) for i in items if isinstance(i, SourceDocument)}
    assert len([i for i in items if isinstance(i, Checkpoint)]) == len(files) == 150


@pytest.mark.parametrize("batch_size", [1, 3, 64])
def test_a_run_commits_a_batch_at_each_checkpoint_that_ends_one(
    tmp_path: Path, batch_size: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The source's batch_size reaches the connector, and each full batch commits with
    its checkpoint: the run saves the checkpoints that end a batch of ``batch_size``
    items, as with one a file (to within a container's members)."""
    root = tmp_path / "root"
    _tree(root)
    wanted, pending, last = [], 0, None
    for item in collect(_connector(root, batch_size).read(WINDOW, None, no_known)).items:
        if not isinstance(item, Checkpoint):
            pending += 1
        elif pending >= batch_size:
            wanted.append(item.cursor)
            pending, last = 0, None
        else:
            last = item.cursor
    wanted += [last] if last else []  # the last batch commits with the last checkpoint
    saved: list[str] = []
    original = RunLedger.save_checkpoint

    def counting(self: RunLedger, run_id: str, source: str, cursor: str, *a, **k):  # type: ignore[no-untyped-def]
        saved.append(cursor)
        return original(self, run_id, source, cursor, *a, **k)

    monkeypatch.setattr(RunLedger, "save_checkpoint", counting)
    extra = f"batch_size = {batch_size}"
    config = write_config(tmp_path, manifest_url=None, sources=filesystem_source(root, extra=extra))
    with Workspace.open(config) as ws:
        run = ws.sync(index=False).runs[0]
    assert run.counts.new == 152
    assert saved == wanted
    assert len(saved) == {1: 150, 3: 50, 64: 2}[batch_size]  # 3: 49 of 3 files and the zip
