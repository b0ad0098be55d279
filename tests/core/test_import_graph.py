"""The layer rule and the no-cycle rule, read from the source with ``ast``.

Layers, each importing only its own layer and those below it (``LAYERS``, lowest
first): core modules (types, errors, clock, identity, retry, units…) ← manifest,
pipeline, sinks, connectors ← sync, indexer, search, events ← config ← runtime (the composition
root) and reports ← rebuilds, executor, scheduler, reads ← the workspace facade ← cli,
api. Every import counts: module level, inside a function, under ``TYPE_CHECKING``.
Every package and top-level module of ``src/headwater`` must appear in ``LAYERS``: a
new one fails the rule until it is given its layer. ``UPWARD_EDGES`` (arrows allowed to
point up) is empty and must stay so.

No import cycle, anywhere in the package, TYPE_CHECKING imports included (a cycle of
types is still a cycle for a reader): ``scripts/import_cycles.py`` computes the
strongly connected components of the import graph. ``ALLOWED_CYCLES`` is empty: the
rule fails on any cycle.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType

import headwater

ROOT = Path(headwater.__file__).parent
ALLOWED_CYCLES: tuple[frozenset[str], ...] = ()  # none left: keep it so


def import_cycles() -> ModuleType:
    """``scripts/import_cycles.py``, loaded as a module."""
    path = ROOT.parent.parent / "scripts" / "import_cycles.py"
    spec = importlib.util.spec_from_file_location("import_cycles", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cycle_problems(
    found: list[frozenset[str]], allowed: tuple[frozenset[str], ...] = ALLOWED_CYCLES
) -> list[str]:
    """Each cycle in ``found`` that no entry of ``allowed`` contains."""
    return [
        f"import cycle: {' -> '.join(sorted(cycle))}"
        for cycle in found
        if not any(cycle <= entry for entry in allowed)
    ]


# Lowest first. A name is a package or top-level module of src/headwater; "" is the
# package root (headwater/__init__.py, the public surface), "__main__" `python -m`.
LAYERS: tuple[tuple[str, ...], ...] = (
    (
        "types",
        "errors",
        "clock",
        "identity",
        "retry",
        "ratelimit",
        "ratelimit_redis",
        "units",
        "jsonview",
        "failpoints",
        "plugins",
        "objectstore",
        "scopes",
    ),
    ("manifest", "pipeline", "sinks", "connectors"),
    ("sync", "indexer", "search", "events"),
    ("config",),
    ("runtime", "reports"),
    ("rebuilds", "executor", "scheduler", "reads", "hints"),
    ("workspace", "workspace_base"),
    ("cli", "api", "__main__", ""),
)
# Names of LAYERS that need not exist yet (none: the composition root landed).
PLANNED: frozenset[str] = frozenset()
# Arrows that point up, (importer, imported) by module. None are left; keep it so.
UPWARD_EDGES: frozenset[tuple[str, str]] = frozenset()


def top_level(module: str) -> str:
    """The package or top-level module ``module`` belongs to ("" for the package root)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def layer_problems(
    graph: Mapping[str, set[str]],
    layers: tuple[tuple[str, ...], ...] = LAYERS,
    allowed: frozenset[tuple[str, str]] = UPWARD_EDGES,
) -> list[str]:
    """Each module of ``graph`` in no layer, and each arrow up that ``allowed`` lacks."""
    level = {name: n for n, names in enumerate(layers) for name in names}
    problems = {
        f"{top_level(module) or module} is in no layer; add it to LAYERS"
        for module in graph
        if top_level(module) not in level
    }
    for module, targets in graph.items():
        for target in targets:
            source_level = level.get(top_level(module))
            target_level = level.get(top_level(target))
            if source_level is None or target_level is None or target_level <= source_level:
                continue
            if (module, target) not in allowed:
                problems.add(
                    f"{module} imports {target}: layer {source_level} may not import layer "
                    f"{target_level} ({' '.join(n or '(root)' for n in layers[target_level])})"
                )
    return sorted(problems)


def test_every_arrow_points_down_the_layers() -> None:
    graph = import_cycles().import_graph(ROOT)
    assert layer_problems(graph) == []


def test_the_layer_lists_name_every_package_and_only_existing_ones() -> None:
    names = [name for layer in LAYERS for name in layer]
    assert len(names) == len(set(names)), "a name is in two layers"
    existing = {top_level(module) for module in import_cycles().import_graph(ROOT)}
    assert set(names) - PLANNED == existing - PLANNED
    assert not PLANNED & existing, "a planned name exists now: delete it from PLANNED"


def test_the_upward_allowlist_only_lists_arrows_that_still_point_up() -> None:
    graph = import_cycles().import_graph(ROOT)
    still = {(source, target) for source, target in UPWARD_EDGES if target in graph.get(source, ())}
    assert still == UPWARD_EDGES, f"gone, delete from UPWARD_EDGES: {UPWARD_EDGES - still}"
    assert layer_problems(graph, allowed=frozenset()) == sorted(
        f"{source} imports {target}: layer {_level(source)} may not import layer "
        f"{_level(target)} ({' '.join(n or '(root)' for n in LAYERS[_level(target)])})"
        for source, target in UPWARD_EDGES
    )


def _level(module: str) -> int:
    return next(n for n, names in enumerate(LAYERS) if top_level(module) in names)


def test_the_layer_rule_sees_type_checking_function_and_relative_imports(
    tmp_path: Path,
) -> None:
    package = tmp_path / "headwater"
    (package / "sinks").mkdir(parents=True)
    (package / "search").mkdir()
    (package / "__init__.py").write_text("from headwater.cli import main\n")
    (package / "sinks" / "__init__.py").write_text("")
    (package / "search" / "__init__.py").write_text("")
    (package / "sinks" / "bad.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from headwater.workspace import Workspace\n"
        "def f():\n    from headwater.search import fusion\n"
        "    import headwater.config\n"
    )
    (package / "search" / "fusion.py").write_text("from ..cli import app\n")
    (package / "search" / "ok.py").write_text("from headwater.sinks import bad\n")
    (package / "cli.py").write_text("import headwater.workspace\n")  # upper layers may
    (package / "config.py").write_text("")
    (package / "workspace.py").write_text("")
    (package / "extra.py").write_text("")
    graph = import_cycles().import_graph(package)
    layers = (("sinks",), ("search",), ("config",), ("workspace",), ("cli", ""))
    assert layer_problems(graph, layers, frozenset()) == [
        "extra is in no layer; add it to LAYERS",
        "headwater.search.fusion imports headwater.cli: layer 1 may not import layer 4 (cli (root))",
        "headwater.sinks.bad imports headwater.config: layer 0 may not import layer 2 (config)",
        "headwater.sinks.bad imports headwater.search.fusion: layer 0 may not import layer 1 (search)",
        "headwater.sinks.bad imports headwater.workspace: layer 0 may not import layer 3 (workspace)",
    ]
    allowed = frozenset({("headwater.sinks.bad", "headwater.config")})
    assert len(layer_problems(graph, layers, allowed)) == 4


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
    allowed = (frozenset({"headwater.workspace", "headwater.executor.work"}),)
    grown = frozenset({*allowed[0], "headwater.config"})
    assert cycle_problems([grown], allowed) == [f"import cycle: {' -> '.join(sorted(grown))}"]
    assert cycle_problems([allowed[0]], allowed) == []
