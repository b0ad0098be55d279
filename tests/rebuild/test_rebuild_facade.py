"""Rebuilds through the Workspace facade, with typed results whose JSON is the CLI's.

Each operation returns a dataclass of ``headwater.rebuilds.results``; ``as_dict()`` has
exactly the keys its outcome has (an up-to-date index no generation, a failed one its
problems), and the result reads like that JSON. An unknown index is refused before any
work, for every operation.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from headwater import Workspace
from headwater.errors import ConfigError
from headwater.indexer.report import IndexReport
from headwater.rebuilds.results import (
    CancelResult,
    RebuildEntry,
    RebuildReport,
    RebuildStatus,
    RetireResult,
    RollbackResult,
    SwitchResult,
)
from workspace_helpers import filesystem_source, write_config

REPORT_KEYS = {"documents", "chunks", "duration_s"}


def test_each_outcome_has_exactly_its_keys() -> None:
    report = IndexReport(replaced=2, chunks=3)
    keys = {
        "up_to_date": {"index", "result", "live"},
        "stopped": {"index", "generation", "index_report", "result"},
        "cancelled": {"index", "generation", "index_report", "result", "live"},
        "failed": {"index", "generation", "index_report", "result", "problems"},
        "switched": {"index", "generation", "index_report", "result"},
        "ready": {"index", "generation", "index_report", "result"},
    }
    for result, expected in keys.items():
        entry = RebuildEntry("main", result, 2, report, live=1, problems=("p",))
        assert set(entry.as_dict()) == expected, result
        assert next(iter(entry.as_dict())) == "index"
    assert RebuildEntry("main", "cancelled", 2, report, live=None)["live"] is None
    failed = SwitchResult("main", 2, "failed", problems=("p",), index_report=report)
    assert failed.as_dict() == {
        "index": "main",
        "generation": 2,
        "result": "failed",
        "problems": ["p"],
    }
    switched = SwitchResult("main", 2, "switched", index_report=report).as_dict()
    assert list(switched) == ["index", "generation", "result", "index_report"]
    assert SwitchResult("main", 2, "cancelled").as_dict() == {
        "index": "main",
        "generation": 2,
        "result": "cancelled",
    }
    stopped = RollbackResult("main", 2, stopped=True, pending=5, index_report=report)
    assert stopped.as_dict() == {"index": "main", "live": 2, "result": "stopped"}
    assert RollbackResult("main", 1, pending=3).as_dict() == {
        "index": "main",
        "live": 1,
        "pending": 3,
    }
    assert (
        set(RollbackResult("main", 1, index_report=report).as_dict()["index_report"]) == REPORT_KEYS
    )
    assert CancelResult("main", 4) == {"index": "main", "cancelled": 4}
    assert RetireResult("main", (1, 2)).as_dict() == {"index": "main", "retired": [1, 2]}


def test_the_facade_rebuilds_switches_rolls_back_cancels_and_retires(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    config = write_config(tmp_path, manifest_url=manifest_url, sources=filesystem_source(corpus))
    with Workspace.open(config) as ws:
        ws.sync()
        up_to_date = ws.rebuild()
        assert isinstance(up_to_date, RebuildReport) and not up_to_date.failed
        assert up_to_date == {"indexes": [{"index": "main", "result": "up_to_date", "live": 1}]}

        built = ws.rebuild(["main"], force=True, switch=False)
        entry = built.indexes[0]
        assert (entry.result, entry.generation) == ("ready", 2)
        assert entry.index_report is not None and entry.index_report.replaced > 0
        switched = ws.rebuild_switch("main")
        assert isinstance(switched, SwitchResult) and switched.result == "switched"

        status = ws.rebuild_status()
        assert isinstance(status, RebuildStatus)
        main = status.indexes[0]
        assert (main.name, main.live) == ("main", 2)
        assert [(g.generation, g.state) for g in main.generations] == [(1, "previous"), (2, "live")]
        assert status.as_dict()["indexes"][0]["generations"][1]["pending"] == 0

        rolled = ws.rebuild_rollback("main")
        assert isinstance(rolled, RollbackResult) and (rolled.live, rolled.pending) == (1, 0)
        assert set(rolled.as_dict()) == {"index", "live", "pending", "index_report"}

        ws.rebuild(["main"], force=True, switch=False)
        assert ws.rebuild_cancel("main") == CancelResult("main", 3)
        retired = ws.rebuild_retire("main")
        assert isinstance(retired, RetireResult) and retired.index == "main"
        with pytest.raises(ConfigError, match="no generation in progress to cancel"):
            ws.rebuild_cancel("main")


def test_an_unknown_index_is_refused_before_any_work(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    config = write_config(tmp_path, manifest_url=manifest_url, sources=filesystem_source(corpus))
    with Workspace.open(config) as ws:
        ws.sync()
        with pytest.raises(ConfigError, match="index 'nope' is not configured"):
            ws.rebuild(["main", "nope"], force=True)
        assert [g.generation for g in ws.manifest.generations.list("main")] == [1]
        for action in (
            ws.rebuild_switch,
            ws.rebuild_rollback,
            ws.rebuild_cancel,
            ws.rebuild_retire,
        ):
            with pytest.raises(ConfigError, match="index 'nope' is not configured"):
                action("nope")
