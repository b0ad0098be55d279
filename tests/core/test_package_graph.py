"""The committed package graph (``docs/images/package-graph.md``) is the one the code draws.

``scripts/package_graph.py`` folds the import graph into packages and writes a Mermaid
diagram; this test regenerates it in memory and fails when the committed file differs,
so the picture in the docs cannot drift from the imports.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import headwater

ROOT = Path(headwater.__file__).parent
SCRIPT = ROOT.parent.parent / "scripts" / "package_graph.py"


def package_graph() -> ModuleType:
    """``scripts/package_graph.py``, loaded as a module."""
    spec = importlib.util.spec_from_file_location("package_graph", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_package_graph_is_current() -> None:
    script = package_graph()
    committed = script.OUTPUT.read_text(encoding="utf-8") if script.OUTPUT.exists() else ""
    assert committed == script.render(ROOT), (
        f"{script.OUTPUT} is stale (the imports changed); regenerate it: {script.REGENERATE}"
    )


def test_the_graph_folds_modules_into_packages_and_leaf_modules_into_core(
    tmp_path: Path,
) -> None:
    package = tmp_path / "headwater"
    (package / "sync").mkdir(parents=True)
    (package / "__init__.py").write_text("from headwater.sync.run import go\n")
    (package / "errors.py").write_text("")
    (package / "types.py").write_text("from headwater.errors import E\n")
    (package / "reports.py").write_text("from headwater.sync import run\n")
    (package / "sync" / "__init__.py").write_text("")
    (package / "sync" / "run.py").write_text(
        "from typing import TYPE_CHECKING\nfrom . import other\n"
        "if TYPE_CHECKING:\n    from headwater.types import T\n"
    )
    (package / "sync" / "other.py").write_text("def f():\n    import headwater.errors\n")
    text = package_graph().render(package)
    body = text.split("```mermaid\n", 1)[1].split("```", 1)[0]
    assert body.splitlines() == [
        "flowchart TD",
        '    n_core["core: errors, types"]',
        '    n_headwater["headwater (package root)"]',
        '    n_reports["reports"]',
        '    n_sync["sync"]',
        "    n_headwater --> n_sync",
        "    n_reports --> n_sync",
        "    n_sync --> n_core",
    ]
    assert package_graph().render(package) == text  # deterministic
