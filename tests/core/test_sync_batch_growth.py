"""Batches grow while nothing changes and shrink at the first change (``BatchLimit``).

A no-op re-sync of a large source would otherwise pay one manifest transaction and one
checkpoint per ``batch_size`` objects; growing quiet batches keeps that to a few dozen,
while a batch that has to read documents stays as small as configured."""

from __future__ import annotations

from pathlib import Path

import pytest

from headwater import Workspace
from headwater.manifest.runs import RunLedger
from headwater.sync.settings import QUIET_GROWTH, BatchLimit
from workspace_helpers import filesystem_source, write_config


def _tree(root: Path, files: int) -> None:
    for i in range(files):
        folder = root / f"d{i // 100:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i:04d}.txt").write_text(f"document {i}\n")


def test_a_quiet_streak_grows_the_batch_and_any_work_shrinks_it() -> None:
    limit = BatchLimit(4)
    for _ in range(20):
        limit.after(quiet=True)
    assert limit.limit == 4 * QUIET_GROWTH
    limit.after(quiet=False)
    assert limit.limit == 4
    limit.after(quiet=True)
    assert limit.limit == 8


def test_a_no_op_resync_saves_few_checkpoints_and_still_sees_every_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = tmp_path / "corpus"
    _tree(corpus, 800)
    config = write_config(
        tmp_path, manifest_url=None, sources=filesystem_source(corpus, extra="batch_size = 4")
    )
    saves: list[str] = []
    original = RunLedger.save_checkpoint

    def counting(self: RunLedger, *args: object, **kwargs: object) -> None:
        saves.append("save")
        original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(RunLedger, "save_checkpoint", counting)
    with Workspace.open(config) as ws:
        first = ws.sync(index=False).runs[0]
        assert first.counts.new == 800
        assert len(saves) >= 800 // 4  # every batch had work: it stayed at batch_size
        saves.clear()
        (corpus / "d05" / "f0550.txt").write_text("edited\n")
        again = ws.sync(index=False).runs[0]
        assert again.counts.as_dict() | {"seen": 0} == {
            "seen": 0,
            "new": 0,
            "changed": 1,
            "unchanged": 799,
            "deleted": 0,
            "failed": 0,
            "stale": 0,
        }
        assert again.counts.seen == 800
        # 4, 8, ... 256 then 256 at a time, back to 4 at the edit: far below 200 saves
        assert len(saves) < 40
