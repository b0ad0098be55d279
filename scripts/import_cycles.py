"""List the import cycles of ``src/headwater``, read from the source with ``ast``.

Every import statement counts: module level, inside a function, under
``TYPE_CHECKING`` (a cycle of types is still a cycle for a reader). An import names
the most specific module of the package it reaches (``from headwater.sync import
gates`` is an edge to ``headwater.sync.gates``, ``from headwater.sync.gates import
GateResult`` too); a cycle is a strongly connected component of two or more modules,
or a module importing itself.

Run: ``python scripts/import_cycles.py [SRC_PACKAGE_DIR]``; it prints one line per
cycle (its modules, sorted) and exits 1 when there is any. ``tests/core/
test_import_graph.py`` loads this file for its no-cycle rule.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

DEFAULT_ROOT = Path(__file__).resolve().parent.parent / "src" / "headwater"


def module_name(path: Path, root: Path) -> str:
    """The dotted name of the module at ``path`` inside the package directory ``root``."""
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_names(tree: ast.AST, module: str, is_package: bool) -> Iterator[str]:
    """Every dotted name an import statement anywhere in ``tree`` reaches."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".")
                drop = node.level - 1 if is_package else node.level
                package = package[: len(package) - drop] if drop else package
                base = ".".join([*package, base] if base else package)
            yield from (f"{base}.{alias.name}" for alias in node.names)


def import_graph(root: Path = DEFAULT_ROOT) -> dict[str, set[str]]:
    """Each module of the package at ``root`` mapped to the package modules it imports."""
    paths = {module_name(path, root): path for path in sorted(root.rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        tree = ast.parse(path.read_text(), str(path))
        targets: set[str] = set()
        for name in imported_names(tree, module, path.name == "__init__.py"):
            while name and name not in paths:
                name = name.rpartition(".")[0]
            if name:
                targets.add(name)
        if module in targets and not _imports_itself(tree, module):
            targets.discard(module)
        graph[module] = targets
    return graph


def _imports_itself(tree: ast.AST, module: str) -> bool:
    """Whether ``tree`` names its own module by an absolute ``import`` (a real self-loop)."""
    return any(
        isinstance(node, ast.Import) and any(a.name == module for a in node.names)
        for node in ast.walk(tree)
    )


def cycles(graph: Mapping[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of ``graph`` that are cycles, largest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    counter = 0

    def visit(start: str) -> None:  # iterative Tarjan: the graph may be deep
        nonlocal counter
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = counter
                    counter += 1
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(graph.get(succ, ())))))
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1 or node in graph.get(node, ()):
                        found.append(frozenset(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(found, key=lambda c: (-len(c), sorted(c)))


def main(argv: list[str]) -> int:
    """Print each cycle of the package directory in ``argv`` (default src/headwater)."""
    root = Path(argv[0]) if argv else DEFAULT_ROOT
    found = cycles(import_graph(root))
    for component in found:
        print(f"{len(component)} modules: {', '.join(sorted(component))}")
    print(f"{len(found)} cycle(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
