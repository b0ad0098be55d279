"""A sync run does not run the garbage collector over the batch it holds.

``sync/garbage.py``: while a run is in progress the youngest generation's threshold is
above what one batch holds, so a no-op of thousands of files triggers no collection
(with CPython's default of 700 it triggered one every ninety items or so); the
thresholds in force before come back when the last of overlapping runs ends, and a
process that disabled collection (threshold 0) keeps it disabled.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from headwater import Workspace
from headwater.sync.garbage import RUN_THRESHOLD, fewer_collections
from workspace_helpers import filesystem_source, write_config

FILES = 3000


@pytest.fixture
def default_thresholds() -> Iterator[tuple[int, int, int]]:
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    try:
        yield gc.get_threshold()
    finally:
        gc.set_threshold(*saved)


def test_a_no_op_of_thousands_of_files_triggers_no_collection(
    tmp_path: Path, default_thresholds: tuple[int, int, int]
) -> None:
    root = tmp_path / "tree"
    for folder in range(3):
        (root / f"d{folder}").mkdir(parents=True)
        for n in range(FILES // 3):
            (root / f"d{folder}" / f"n{n:04}.md").write_text(f"# Note {n}\n")
    config = write_config(tmp_path, manifest_url=None, sources=filesystem_source(root))
    seen: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            seen.append(info["generation"])

    with Workspace.open(config) as ws:
        ws.sync(index=False)
        gc.collect()
        gc.callbacks.append(count)
        try:
            report = ws.sync(index=False)
        finally:
            gc.callbacks.remove(count)
        assert gc.get_threshold() == default_thresholds  # restored after the run
    assert report.runs[0].counts.unchanged == FILES
    # With the default 700 the same no-op collects some 30 times (about 8 tracked objects
    # per listed file are alive until its batch is decided).
    assert len(seen) <= 2, f"{len(seen)} collections during a no-op of {FILES} files"


def test_overlapping_runs_restore_the_thresholds_when_the_last_ends(
    default_thresholds: tuple[int, int, int],
) -> None:
    gc.set_threshold(1234, 7, 9)
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    during: list[tuple[int, int, int]] = []

    def first() -> None:
        with fewer_collections():
            first_in.set()
            second_in.wait(10)
            during.append(gc.get_threshold())
        first_out.set()

    def second() -> None:
        first_in.wait(10)
        with fewer_collections():
            second_in.set()
            first_out.wait(10)
            during.append(gc.get_threshold())  # the first run has ended, this one has not

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert during == [(RUN_THRESHOLD, 7, 9), (RUN_THRESHOLD, 7, 9)]
    assert gc.get_threshold() == (1234, 7, 9)


def test_a_disabled_or_higher_threshold_is_left_as_it_is(
    default_thresholds: tuple[int, int, int],
) -> None:
    for setting in [(0, 10, 10), (RUN_THRESHOLD * 2, 10, 10)]:
        gc.set_threshold(*setting)
        with fewer_collections():
            assert gc.get_threshold() == setting
        assert gc.get_threshold() == setting
