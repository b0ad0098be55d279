"""The layer rule, read from the source with ``ast``: lower layers never import upward.

Connectors, sync, manifest, pipeline, sinks, search, indexer and the core modules
(types, errors, clock, identity, retry, durations) must not import the workspace, the
CLI, the config, the HTTP API, the scheduler or the executor: not at module level, not
inside a function, not under ``TYPE_CHECKING``. Sinks never import search (search asks
sinks and fuses), and search never imports the CLI. Only the composition root
(``headwater.workspace``) and the layers above it wire parts together.
"""

from __future__ import annotations

import ast
from pathlib import Path

import headwater

ROOT = Path(headwater.__file__).parent
LOWER = (
    "connectors",
    "sync",
    "manifest",
    "pipeline",
    "sinks",
    "search",
    "indexer",
    "types",
    "errors",
    "clock",
    "identity",
    "retry",
    "durations",
    "jsonview",
)
UPPER = (
    "workspace",
    "workspace_indexes",
    "workspace_reads",
    "cli",
    "config",
    "api",
    "scheduler",
    "executor",
    "reports",
)
EXTRA = {"sinks": ("search",), "search": ("cli",)}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(tree: ast.AST, module: str) -> list[str]:
    """Every module an import statement anywhere in ``tree`` names (relative ones too)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".")[: -node.level]
                base = ".".join([*package, base] if base else package)
            found.append(base)
            found += [f"{base}.{alias.name}" for alias in node.names]
    return found


def violations(root: Path) -> list[str]:
    problems: set[str] = set()
    for path in sorted(root.rglob("*.py")):
        module = module_name(path)
        layer = module.split(".")[1] if "." in module else ""
        if layer not in LOWER:
            continue
        banned = [f"headwater.{name}" for name in UPPER + EXTRA.get(layer, ())]
        for target in imported(ast.parse(path.read_text(), str(path)), module):
            for bad in banned:
                if target == bad or target.startswith(bad + "."):
                    problems.add(f"{module} imports {bad}")
    return sorted(problems)


def test_lower_layers_never_import_upper_ones() -> None:
    assert violations(ROOT) == []


def test_the_rule_sees_imports_in_functions_and_type_checking(tmp_path: Path) -> None:
    package = tmp_path / "headwater"
    (package / "sinks").mkdir(parents=True)
    (package / "search").mkdir()
    (package / "sinks" / "bad.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from headwater.workspace import Workspace\n"
        "def f():\n    from headwater.search import fusion\n"
        "    import headwater.config\n"
    )
    (package / "search" / "bad.py").write_text("from ..cli import app\n")
    (package / "cli.py").write_text("import headwater.workspace\n")  # upper layers may
    global ROOT
    saved, ROOT = ROOT, package
    try:
        found = violations(package)
    finally:
        ROOT = saved
    assert found == [
        "headwater.search.bad imports headwater.cli",
        "headwater.sinks.bad imports headwater.config",
        "headwater.sinks.bad imports headwater.search",
        "headwater.sinks.bad imports headwater.workspace",
    ]
