"""The composition root and the facade: executors by name, injected, never imported.

``Workspace.open`` finds its executor by the ``[executor] type`` name; the facade module
imports no executor, scheduler, API or CLI module, and any object with the ``Executor``
methods can run its writes (a recording one here).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import headwater.workspace
import headwater.workspace_base
from headwater.errors import ConfigError
from headwater.executor.dispatch import CeleryExecutor
from headwater.executor.local import LocalExecutor
from headwater.indexer.report import IndexReport
from headwater.reports import ExecutorState, SyncResult
from headwater.runtime import Runtime
from headwater.runtime.executor import executor_factory
from headwater.workspace import Workspace
from workspace_helpers import filesystem_source, write_config


def test_executors_are_found_by_their_config_name() -> None:
    assert executor_factory("local") is LocalExecutor
    assert executor_factory("celery") is CeleryExecutor
    with pytest.raises(ConfigError, match=r"executor .nope. is not installed.*celery, local"):
        executor_factory("nope")


@pytest.mark.parametrize("facade", [headwater.workspace, headwater.workspace_base])
def test_the_facade_imports_no_executor_scheduler_api_or_cli(facade: ModuleType) -> None:
    tree = ast.parse(Path(str(facade.__file__)).read_text())
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    upper = ("headwater.executor", "headwater.scheduler", "headwater.api", "headwater.cli")
    assert [n for n in names if n.startswith(upper)] == []


class Recording:
    """An executor that only records what the facade asked of it."""

    name = "recording"

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def sync(self, sources: Sequence[str] | None = None, **options: Any) -> SyncResult:
        self.calls.append(("sync", (list(sources or []), options["index"])))
        return SyncResult()

    def sync_permissions(self, sources: Sequence[str] | None = None, *, index: bool = True) -> Any:
        raise AssertionError("not asked")

    def index(self, only: Sequence[str] | None = None) -> IndexReport:
        self.calls.append(("index", only))
        return IndexReport()

    def prune(self, sources: Sequence[str] | None = None, **options: Any) -> list[Any]:
        self.calls.append(("prune", list(sources or [])))
        return []

    def state(self) -> ExecutorState:
        return ExecutorState(type="recording", running={})


def test_an_injected_executor_runs_the_facades_writes(tmp_path: Path) -> None:
    corpus = tmp_path / "docs"
    corpus.mkdir()
    (corpus / "a.md").write_text("the budget for next year")
    config = write_config(tmp_path, manifest_url=None, sources=filesystem_source(corpus))
    recording = Recording()
    with Workspace(Runtime.open(config), recording) as ws:  # type: ignore[arg-type]
        assert ws.sync(["docs"], index=False) == SyncResult()
        ws.prune(["docs"])
        assert recording.calls == [
            ("sync", (["docs"], False)),
            ("prune", ["docs"]),
            ("index", None),
        ]
        assert ws.status()["executor"]["type"] == "recording"
        assert ws.manifest.count_documents("docs", "active") == 0  # nothing ran here
        local = ws.sync(["docs"], executor="local")  # a name picks another executor
        assert [r.status for r in local.runs] == ["succeeded"]
        assert [h["title"] for h in ws.search("budget", groups=["staff"])] == ["a.md"]
    with Workspace.open(config) as opened:
        assert isinstance(opened.executor, LocalExecutor)
