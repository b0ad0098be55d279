"""The layer rule, read from the source with ``ast``: lower layers never import upward.

Connectors, sync, manifest, pipeline, sinks, search, indexer and the core modules
(types, errors, clock, identity, retry, durations) must not import the workspace, the
CLI, the config, the HTTP API, the scheduler or the executor: not at module level, not
inside a function, not under ``TYPE_CHECKING``. Sinks never import search (search asks
sinks and fuses), and search never imports the CLI. Only the composition root
(``headwater.runtime``) and the layers above it wire parts together.

No import cycle, anywhere in the package, TYPE_CHECKING imports included (a cycle of
types is still a cycle for a reader): ``scripts/import_cycles.py`` computes the
strongly connected components of the import graph. ``ALLOWED_CYCLES`` lists, by module
set, the cycles that remain today; the rule fails on any cycle not listed and on a
listed one that grew. The allowlist must only shrink, to empty: when a cycle is broken,
delete its entry (or replace it by the smaller set that remains).
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from types import ModuleType

import headwater

ROOT = Path(headwater.__file__).parent
ALLOWED_CYCLES = (
    frozenset(
        {
            "headwater.cli.app",
            "headwater.cli.commands",
            "headwater.cli.dlq",
            "headwater.cli.ops",
            "headwater.cli.rebuild",
            "headwater.cli.schedule",
            "headwater.cli.serve",
            "headwater.cli.workers",
        }
    ),
)


def import_cycles() -> ModuleType:
    """``scripts/import_cycles.py``, loaded as a module."""
    path = ROOT.parent.parent / "scripts" / "import_cycles.py"
    spec = importlib.util.spec_from_file_location("import_cycles", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cycle_problems(found: list[frozenset[str]]) -> list[str]:
    """Each cycle in ``found`` that no entry of ``ALLOWED_CYCLES`` contains."""
    return [
        f"import cycle: {' -> '.join(sorted(cycle))}"
        for cycle in found
        if not any(cycle <= allowed for allowed in ALLOWED_CYCLES)
    ]


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
    "runtime",
    "reads",
    "rebuilds",
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


def test_no_import_cycle_beyond_the_shrinking_allowlist() -> None:
    cycles = import_cycles()
    found = cycles.cycles(cycles.import_graph(ROOT))
    assert cycle_problems(found) == []
    # An entry no longer a cycle as listed (broken, or split smaller) is shrunk here too.
    assert sorted(map(sorted, found)) == sorted(map(sorted, ALLOWED_CYCLES))


def test_the_cycle_rule_sees_type_checking_function_and_relative_imports(
    tmp_path: Path,
) -> None:
    package = tmp_path / "headwater"
    (package / "a").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a" / "__init__.py").write_text("from .one import X\n")
    (package / "a" / "one.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from headwater.b import Y\n"
    )
    (package / "b.py").write_text("def f():\n    from .a import two\n")
    (package / "a" / "two.py").write_text("from . import one\n")
    (package / "c.py").write_text("import headwater.a.one\n")  # imports into the cycle only
    cycles = import_cycles()
    found = cycles.cycles(cycles.import_graph(package))
    assert found == [frozenset({"headwater.a.one", "headwater.b", "headwater.a.two"})]
    assert cycle_problems(found) == [
        "import cycle: headwater.a.one -> headwater.a.two -> headwater.b"
    ]
    grown = frozenset({*ALLOWED_CYCLES[0], "headwater.config"})
    assert cycle_problems([grown]) == [f"import cycle: {' -> '.join(sorted(grown))}"]
    assert cycle_problems([ALLOWED_CYCLES[0]]) == []
